static unsigned long table[64];

static void fill(void) {
    for (int i = 0; i < 64; i++)
        table[i] = (unsigned long)i * i + 7;
}

unsigned long table_sum(int n) {
    if (!table[1])
        fill();
    unsigned long s = 0;
    for (int i = 0; i < n; i++)
        s += table[i];
    return s;
}
