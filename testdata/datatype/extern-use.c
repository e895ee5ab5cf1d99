/* Reads a global that extern-def.c defines: this unit only declares it. */
struct conf {
	long pad;
	int level;
	int flags;
};

extern struct conf config;

__attribute__((noinline)) int get_level(void) { return config.level; }

int main(void) { return get_level() - 2; }
