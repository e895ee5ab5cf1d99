/* Shared library for symbolize/datatype's tests: its exported global is
 * reached through the GOT (position-independent code), so attributing the
 * access needs the GOT slot's relocation. Built by build.sh. */
struct config { long version; int flags; int limits[4]; };
struct config lib_config = { 1, 2, {3, 4, 5, 6} };
__attribute__((noinline)) int lib_limit2(void) { return lib_config.limits[2]; }
__attribute__((noinline)) long lib_version(void) { return lib_config.version; }
