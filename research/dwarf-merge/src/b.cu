__device__ float b_tab[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ __noinline__ float b_helper(int k, float w) { return w * b_tab[k & 3]; }
extern "C" __device__ float b_scale(float x, int k) {
  float r = b_helper(k, x);
  if (r > 10.0f) r = 10.0f;
  return r;
}
