__device__ __forceinline__ float e_sq(float x) { return x * x; }
__device__ __noinline__ float e_sum(const float *p, int n) {
  float buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = e_sq(p[i % n]);
  float s = 0.0f;
  for (int i = 0; i < n && i < 8; ++i) s += buf[(i * 3) & 7];
  return s;
}
extern "C" __global__ void e_k(float *o, const float *p, int n) { o[threadIdx.x] = e_sum(p, n) + e_sq(o[0]); }
