__device__ __noinline__ float c_f(float x, int k) {
  float r = x;
  for (int i = 0; i < k; ++i) { float t = r * 2.0f; r = t + i; }
  int j = k * 3;
  float q = r + j;
  return q;
}
__device__ __noinline__ float c_g(float x, int k) {
  float r = x;
  if (k > 2) { float t = r * 2.0f; r = t + k; }
  return r;
}
extern "C" __global__ void c_k(float *o, int n) { o[0] = c_f(1.0f, n) + c_g(2.0f, n); }
