/* engine_wait.c - see engine_wait.h. */
#include "engine_wait.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* What a hung engine was doing: its state and CPU ticks. */
static void print_state(pid_t pid, int seconds)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return;
	char *q = fgets(line, sizeof(line), fp) ? strrchr(line, ')') : NULL;
	unsigned long ut = 0, st = 0;
	if (q && sscanf(q + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		fprintf(stderr, "engine has not returned after %d s: state %c, %lu user + %lu system "
				"ticks of CPU\n",
			seconds, q[2], ut, st);
	fclose(fp);
}

bool engine_wait(pid_t pid, int seconds, int *status)
{
	for (int i = 0; i < seconds * 10; i++) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		if (waitpid(pid, status, WNOHANG) == pid) {
			if (WIFSIGNALED(*status))
				fprintf(stderr, "engine died of signal %d (%s)\n", WTERMSIG(*status),
					strsignal(WTERMSIG(*status)));
			return true;
		}
	}
	print_state(pid, seconds);
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}
