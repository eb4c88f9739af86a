#pragma once

#include <cstddef>
#include <vector>

#include "region/box.hpp"

namespace unimem {

/// BBMM Algorithm 2, get_disjoint_bounding_boxes() (001_9219257c3045faa0.txt, section 6.2):
/// turns possibly overlapping boxes into disjoint non-empty boxes covering exactly their union.
/// Each input box in turn has the parts already present in the disjoint set subtracted out
/// (lines 4-6: intersect with each present box, then bb_subtract the intersection); what remains
/// is appended (line 7). Since bb_subtract returns a simple union of up to 2N boxes, the remainder
/// is kept as a list of pieces rather than one box. The output keeps Algorithm 2's order and cuts,
/// which is not canonical: build a BoxSet from it for a canonical form.
template <std::size_t N>
std::vector<Box<N>> disjoint_decomposition(const std::vector<Box<N>>& boxes) {
  std::vector<Box<N>> disjoint;  // line 1
  std::vector<Box<N>> remainder;
  std::vector<Box<N>> next;
  for (const Box<N>& initial : boxes) {  // line 2
    remainder.clear();
    if (!initial.empty()) remainder.push_back(initial);                        // line 3
    for (std::size_t j = 0; j < disjoint.size() && !remainder.empty(); ++j) {  // line 4
      next.clear();
      for (const Box<N>& piece : remainder) {
        const Box<N> common = piece.intersect(disjoint[j]);  // line 5
        if (common.empty()) {
          next.push_back(piece);
          continue;
        }
        for (const Box<N>& rest : piece.subtract(common)) next.push_back(rest);  // line 6
      }
      remainder.swap(next);
    }
    disjoint.insert(disjoint.end(), remainder.begin(), remainder.end());  // line 7
  }
  return disjoint;
}

}  // namespace unimem
