/* Test program for symbolize/datatype: each function makes one kind of
 * memory access whose data type the attribution engine must name. The
 * expected results are located in the compiled binaries by disassembly
 * (see ../../symbolize/datatype/datatype_test.go), never by perf runs.
 * Built by build.sh; keep functions noinline so their code stays put. */
#include <stdlib.h>

struct node {
	struct node *next;
	long key;
	int val;
};

struct inner {
	int x;
	int y;
};

struct outer {
	long a;
	struct inner in;
	char name[8];
	struct node *head;
};

union value {
	long l;
	double d;
	unsigned char b[8];
};

struct tagged {
	int kind;
	union value v;
};

struct flags {
	unsigned ready : 1;
	unsigned mode : 3;
	unsigned count : 12;
	int after;
};

typedef struct {
	int w;
	int h;
	long area;
} rect_t;

struct counters {
	long hits;
	long misses;
	long table[4];
};

struct small {
	int a;
	int b;
};

struct counters stats;
volatile long sink;

/* pointer parameter: n->key */
__attribute__((noinline)) long get_key(struct node *n) { return n->key; }

/* linked-list loop: n->val, n = n->next */
__attribute__((noinline)) long sum_list(struct node *n)
{
	long s = 0;
	for (; n; n = n->next)
		s += n->val;
	return s;
}

/* nested struct member: o->in.y */
__attribute__((noinline)) int get_y(struct outer *o) { return o->in.y; }

/* array member: o->name[3] */
__attribute__((noinline)) int get_name3(struct outer *o) { return o->name[3]; }

/* union member: t->v.d */
__attribute__((noinline)) double get_d(struct tagged *t) { return t->v.d; }

/* bitfield: f->mode */
__attribute__((noinline)) unsigned get_mode(struct flags *f) { return f->mode; }

/* typedef'd struct: r->area */
__attribute__((noinline)) long get_area(rect_t *r) { return r->area; }

/* global via RIP-relative access: stats.misses and stats.table[2] */
__attribute__((noinline)) void count_miss(void) { stats.misses++; }
__attribute__((noinline)) void count_table(void) { stats.table[2] += 3; }

/* stack-local struct via fbreg: o lives in the frame, filled by a call */
__attribute__((noinline)) void fill(struct outer *o, int v)
{
	o->a = v;
	o->in.x = v + 1;
	o->in.y = v + 2;
	o->head = 0;
}

__attribute__((noinline)) long use_local(int v)
{
	struct outer o;
	fill(&o, v);
	return o.in.y * o.a;
}

/* inlined function's variables: list_keys's n is an inlined parameter that
 * lives in a register across the loop */
static inline long list_keys(struct node *n)
{
	long c = 0;
	for (; n; n = n->next)
		c ^= n->key;
	return c;
}

__attribute__((noinline)) long inl_keys(struct outer *o) { return list_keys(o->head) + o->a; }

/* a plain add with no memory operand: unknown */
__attribute__((noinline)) long add3(long a, long b, long c)
{
	return (a ^ b) + (c ^ a);
}

/* offset past the type: reads 16 bytes into an 8-byte struct */
__attribute__((noinline)) long past_end(struct small *s) { return ((long *)s)[2]; }

/* second phase: a pointer loaded from a member with no variable of its own */
__attribute__((noinline)) long head_key(struct outer *o) { return o->head->key; }

/* second phase: a call's return value in rax */
__attribute__((noinline)) struct node *make_node(long key)
{
	struct node *n = malloc(sizeof *n);
	if (!n)
		abort();
	n->next = 0;
	n->key = key;
	n->val = (int)key;
	return n;
}

__attribute__((noinline)) int new_val(long key) { return make_node(key)->val; }

int main(int argc, char **argv)
{
	long loops = argc > 1 ? atol(argv[1]) : 1;
	struct node *list = 0;
	for (int i = 0; i < 64; i++) {
		struct node *n = make_node(i);
		n->next = list;
		list = n;
	}
	struct outer o = { .a = 1, .in = { 2, 3 }, .name = "abcdefg", .head = list };
	struct tagged t = { .kind = 1, .v = { .d = 2.5 } };
	struct flags f = { .ready = 1, .mode = 5, .count = 7, .after = 9 };
	rect_t r = { .w = 2, .h = 3, .area = 6 };
	struct small s[2] = { { 1, 2 }, { 3, 4 } };
	long acc = 0;
	for (long i = 0; i < loops; i++) {
		acc += get_key(list) + sum_list(list) + get_y(&o) + get_name3(&o);
		acc += (long)get_d(&t) + get_mode(&f) + get_area(&r);
		count_miss();
		count_table();
		acc += use_local((int)i) + inl_keys(&o) + add3(acc, i, 3);
		acc += past_end(s) + head_key(&o);
		if ((i & 1023) == 0) /* new_val leaks a node: call it rarely */
			acc += new_val(i & 7);
	}
	sink = acc + stats.misses;
	return 0;
}
