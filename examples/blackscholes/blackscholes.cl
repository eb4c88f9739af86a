// blackscholes: European call and put prices (the NVIDIA SDK BlackScholes kernel), one work-item
// per option. All arrays hold options [base, ...) (0 for whole buffers). Launched over the options
// of the block with a global offset. exp, log and sqrt are the OpenCL built-ins (exp and log may
// differ from the host's libm by a few ulp: the reference is compared with a tolerance).
#pragma OPENCL FP_CONTRACT OFF

float cumulative_normal(float d) {
  const float a1 = 0.31938153f;
  const float a2 = -0.356563782f;
  const float a3 = 1.781477937f;
  const float a4 = -1.821255978f;
  const float a5 = 1.330274429f;
  const float rsqrt_2pi = 0.39894228040143267793994605993438f;
  const float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
  float cnd = rsqrt_2pi * exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  if (d > 0.0f) cnd = 1.0f - cnd;
  return cnd;
}

kernel void blackscholes(global const float* price, global const float* strike,
                         global const float* years, global float* call, global float* put,
                         int base, float riskfree, float volatility) {
  const int i = get_global_id(0) - base;
  const float s = price[i];
  const float x = strike[i];
  const float t = years[i];
  const float sqrt_t = sqrt(t);
  const float d1 =
      (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
  const float d2 = d1 - volatility * sqrt_t;
  const float cnd1 = cumulative_normal(d1);
  const float cnd2 = cumulative_normal(d2);
  const float exp_rt = exp(-riskfree * t);
  call[i] = s * cnd1 - x * exp_rt * cnd2;
  put[i] = x * exp_rt * (1.0f - cnd2) - s * (1.0f - cnd1);
}
