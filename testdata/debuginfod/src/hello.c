/* hello: the program whose executable and debug info the debuginfod tests
   fetch by build ID. */
#include <stdio.h>

struct greeting {
	const char *who;
	int times;
};

static int greet(const struct greeting *g)
{
	int n = 0;
	for (int i = 0; i < g->times; i++)
		n += printf("hello, %s\n", g->who);
	return n;
}

int main(int argc, char **argv)
{
	struct greeting g = { argc > 1 ? argv[1] : "world", 1 };
	return greet(&g) > 0 ? 0 : 1;
}
