// gradtrace capture core: JSON numbers and strings exactly as ``json.dumps`` writes them.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// ------------------------------------------------------------------------- JSON writing

// ``digits`` (no dot, no trailing zeros but one) times 10^(exp10 - nd + 1), laid out as
// Python's ``repr`` lays out a float (exponent form below 1e-4 and from 1e16).
void format_digits(std::string& out, bool neg, const char* digits, int nd, int exp10) {
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  char tmp[48];
  char* w = tmp;
  if (neg) *w++ = '-';
  if (decpt <= -4 || decpt > 16) {  // d[.ddd]e(+|-)XX
    *w++ = digits[0];
    if (nd > 1) { *w++ = '.'; std::memcpy(w, digits + 1, static_cast<size_t>(nd - 1)); w += nd - 1; }
    *w++ = 'e';
    int ex = decpt - 1;
    *w++ = ex < 0 ? '-' : '+';
    ex = std::abs(ex);
    if (ex < 10) *w++ = '0';
    w = std::to_chars(w, tmp + sizeof tmp, ex).ptr;
  } else if (decpt <= 0) {
    *w++ = '0'; *w++ = '.';
    for (int i = 0; i < -decpt; ++i) *w++ = '0';
    std::memcpy(w, digits, static_cast<size_t>(nd)); w += nd;
  } else if (decpt >= nd) {
    std::memcpy(w, digits, static_cast<size_t>(nd)); w += nd;
    for (int i = nd; i < decpt; ++i) *w++ = '0';
    *w++ = '.'; *w++ = '0';
  } else {
    std::memcpy(w, digits, static_cast<size_t>(decpt)); w += decpt;
    *w++ = '.';
    std::memcpy(w, digits + decpt, static_cast<size_t>(nd - decpt)); w += nd - decpt;
  }
  out.append(tmp, static_cast<size_t>(w - tmp));
}

template <typename F>
void format_shortest(std::string& out, F x) {
  if (std::isnan(x)) { out += "\"nan\""; return; }
  if (std::isinf(x)) { out += x > 0 ? "\"inf\"" : "\"-inf\""; return; }
  if (x == 0) { out += std::signbit(x) ? "-0.0" : "0.0"; return; }
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const char* p = buf;  // "-d.ddde+XX"
  bool neg = *p == '-';
  if (neg) ++p;
  char digits[24];
  int nd = 0;
  const char* e = p;
  for (; *e != 'e'; ++e) if (*e != '.') digits[nd++] = *e;
  int exp10 = 0;
  std::from_chars(e + 1 + (e[1] == '+'), res.ptr, exp10);
  while (nd > 1 && digits[nd - 1] == '0') --nd;
  format_digits(out, neg, digits, nd, exp10);
}

// A float64 as ``json.dumps`` writes it.
void format_double(std::string& out, double x) { format_shortest(out, x); }

// NOTE [float32 values]: a number of a float32 (or float16/bfloat16) tensor is written with
// the fewest digits that read back as the same float32 (numpy's repr of a float32): what the
// tensor holds, exactly, without the 8-9 digits of noise its float64 expansion adds. Parsed
// as a float64 and written again by ``json.dumps``, it gives the same text (no shorter
// decimal reads back as that float64), so document ids are unaffected.
void format_float32(std::string& out, double x) { format_shortest(out, static_cast<float>(x)); }

void format_int(std::string& out, int64_t x) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, x).ptr - buf));
}

}  // namespace gradtrace
