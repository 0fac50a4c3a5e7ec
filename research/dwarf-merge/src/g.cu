__device__ __forceinline__ float g_tw(float x) { return 2.0f * x + 1.0f; }
extern "C" __global__ void g_k(float *o, int n) { float a[4] = {1,2,3,4}; o[threadIdx.x] = g_tw(o[n]) + g_tw(a[n & 3]); }
