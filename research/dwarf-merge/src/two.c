struct pa { float x, y; };
float f1(float u) { struct pa p = {u, u+1}; float *q = &p.x; return q[0] + q[1]; }
float f2(float u) { struct pa p = {u, u*2}; float *q = &p.y; return q[0] - q[-1]; }
