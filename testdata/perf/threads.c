// threads runs two named worker threads and forks a child that execs
// /bin/true, so recordings of it hold COMM, FORK, EXIT and MMAP2 records for
// several threads and processes.
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double secs) {
	double end = now() + secs;
	while (now() < end)
		for (int k = 0; k < 10000; k++)
			sink += k * k;
}

static void *worker(void *arg) {
	prctl(PR_SET_NAME, (const char *)arg);
	spin(0.05);
	return NULL;
}

int main(void) {
	pthread_t a, b;
	pthread_create(&a, NULL, worker, "worker-a");
	pthread_create(&b, NULL, worker, "worker-b");
	pid_t pid = fork();
	if (pid == 0) {
		spin(0.02);
		execl("/bin/true", "true", (char *)NULL);
		_exit(1);
	}
	spin(0.03);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	waitpid(pid, NULL, 0);
	return 0;
}
