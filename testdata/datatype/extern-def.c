/* The global that extern-use.c reads, defined in another compile unit
 * (lazy indexing's extern globals: symbolize/datatype/lazy_test.go). */
struct conf {
	long pad;
	int level;
	int flags;
};

struct conf config = {1, 2, 3};
