// Array accesses with a variable and a constant index, for the data-type
// page: a variable index must not be credited to element [0]
// (symbolize/datatype's TestAttributeArrayIndex). Built by build.sh.
#include <stdlib.h>

struct slot {
	int lo, hi;
};

struct sensor {
	long id;
	int load[16];
	struct slot slots[4];
};

int table[32];

__attribute__((noinline)) int load_at(struct sensor *s, int i) { return s->load[i]; }

__attribute__((noinline)) int load_third(struct sensor *s) { return s->load[3]; }

__attribute__((noinline)) int slot_hi(struct sensor *s, int i) { return s->slots[i].hi; }

__attribute__((noinline)) int slot2_lo(struct sensor *s) { return s->slots[2].lo; }

__attribute__((noinline)) int table_at(int i) { return table[i]; }

__attribute__((noinline)) int table_fifth(void) { return table[5]; }

int main(int argc, char **argv) {
	struct sensor *s = calloc(1, sizeof *s);
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long sum = 0;
	for (int k = 0; k < n; k++) {
		int i = k & 15;
		sum += load_at(s, i) + load_third(s) + slot_hi(s, i & 3) + slot2_lo(s) + table_at(i) + table_fifth();
		s->load[i] += k;
		table[i + 1] += k;
	}
	free(s);
	return sum == 42;
}
