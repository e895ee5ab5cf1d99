/* Skid correction test program (symbolize/datatype/skid_test.go).
 * Timer-interrupt samples land on the instruction after the one that took
 * the time; the data-type page may count a sample whose instruction touches
 * no memory on the access just before it in its basic block. The inline
 * assembly fixes the instruction order the test relies on:
 *   load n->key; test (no memory: skids back to n->key); jz;
 *   load n->val; label: add (no memory, but a jump target: execution may
 *   come from the jz, so no skid to n->val).
 * Built by build.sh: gcc -O2 -g -o skid skid.c */
struct node {
	struct node *next;
	long key;
	int val;
};

__attribute__((noinline)) long after_load(struct node *n, long x)
{
	long r;
	__asm__ volatile(
		"mov 8(%1), %0\n\t"
		"test %2, %2\n\t"
		"jz 1f\n\t"
		"movslq 16(%1), %0\n\t"
		"1:\n\t"
		"add $1, %0\n\t"
		: "=&r"(r)
		: "r"(n), "r"(x));
	return r;
}

int main(int argc, char **argv)
{
	(void)argv;
	struct node n = {0, 41, argc};
	return (int)after_load(&n, argc - 1);
}
