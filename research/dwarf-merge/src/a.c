extern float b_scale(float x, int k);
struct pa { float x, y; };
int a_count;
float a_len2(struct pa p) { return p.x * p.x + p.y * p.y; }
float a_main(float u, float v, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
    struct pa p = {u + i, v - i};
    acc += a_len2(p);
  }
  a_count++;
  return b_scale(acc, n);
}
