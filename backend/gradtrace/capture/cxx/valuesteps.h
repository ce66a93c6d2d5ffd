// The value steps' norms as the document writes them (NOTE [a leaf's value around each step]
// in capture/valuesteps.py): each the float64 that the fewest digits reading back as the same
// float32 denote, ``float(str(numpy.float32(x)))``, for a whole list in one call. Its Python
// twin is ``f32_twin`` in capture/valueleaves.py; both write the same numbers (tests/capture/
// test_value_steps.py).
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "json.h"

namespace gradtrace {

// NaN and the infinities pass as themselves (as float32): the caller writes them as strings.
inline std::vector<double> float32_values(const std::vector<double>& xs) {
  std::vector<double> out;
  out.reserve(xs.size());
  std::string text;
  for (double x : xs) {
    float f = static_cast<float>(x);
    if (!std::isfinite(f)) {
      out.push_back(static_cast<double>(f));
      continue;
    }
    text.clear();
    format_float32(text, x);
    double back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    out.push_back(back);
  }
  return out;
}

}  // namespace gradtrace
