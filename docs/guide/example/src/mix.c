static unsigned long rot(unsigned long x, int r) { return (x << r) | (x >> (64 - r)); }

unsigned long mix(unsigned long x) {
    x ^= rot(x, 13);
    x *= 0x9E3779B97F4A7C15ul;
    return x ^ rot(x, 29);
}
