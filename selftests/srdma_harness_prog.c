// SPDX-License-Identifier: GPL-2.0-only
/*
 * srdma_harness.sh's subject: prints the TAP its arguments ask for, then ends as the last one
 * says, so that the harness can be shown each way a test program goes wrong.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "ok")) {
			printf("ok %d step\n", ++n);
		} else if (!strcmp(argv[i], "notok")) {
			printf("not ok %d step\n", ++n);
		} else if (!strncmp(argv[i], "plan=", 5)) {
			printf("1..%s\n", argv[i] + 5);
		} else if (!strcmp(argv[i], "plan")) {
			printf("1..%d\n", n);
		} else if (!strcmp(argv[i], "crash")) {
			fflush(stdout);
			raise(SIGSEGV);
		} else if (!strcmp(argv[i], "hang")) {
			fflush(stdout);
			pause();
		} else if (!strncmp(argv[i], "exit=", 5)) {
			return atoi(argv[i] + 5);
		}
	}
	return 0;
}
