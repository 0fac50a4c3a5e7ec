static inline float d_sq(float x) { return x * x; }
static inline float d_cube(float x) { float s = d_sq(x); return s * x; }
float d_poly(float x, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) { float t = d_cube(x + i); acc += t > 3.0f ? t : d_sq(t); }
  return acc;
}
float d_two(float a, float b) { return d_cube(a) - d_sq(b); }
