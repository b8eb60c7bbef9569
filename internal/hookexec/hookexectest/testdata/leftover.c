// leftover leaves a task behind the way a hostile plugin command can, for
// the Tracker's tests:
//
//	leftover MODE FILE READY [CONTENT]
//
// forks; the child calls setsid and becomes, by MODE, something that
// rewrites FILE (with CONTENT, "tampered\n" by default) every 2 ms until
// killed:
//
//	daemon         a grandchild (double fork): re-parented
//	zombie-thread  a second thread, after which the main thread exits:
//	               the process shows as a zombie (state Z) while it runs
//	clone          a process cloned with no exit signal (no SIGCHLD)
//	join-group     a process that joins the process group of the parent of
//	               its parent (the server's) instead of calling setsid
//
// and creates READY once it runs; the command's own process exits once
// READY exists. MODE shm creates two System V shared memory segments of
// 1 MiB, prints their IDs and exits; MODE sem two semaphore sets, MODE
// msg two message queues holding a message each, likewise.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

static const char *file, *ready, *content = "tampered\n";

static void touch(const char *p) {
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
}

static void rewrite(void) {
	for (;;) {
		int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			size_t n = strlen(content);
			if (write(fd, content, n) != (ssize_t)n) {
			}
			close(fd);
		}
		usleep(2000);
	}
}

static void *thread_main(void *arg) {
	(void)arg;
	touch(ready);
	rewrite();
	return NULL;
}

static int clone_main(void *arg) {
	(void)arg;
	touch(ready);
	rewrite();
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	if (strcmp(mode, "shm") == 0) {
		for (int i = 0; i < 2; i++) {
			int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
			if (id < 0) {
				perror("shmget");
				return 1;
			}
			printf("%d\n", id);
		}
		return 0;
	}
	if (strcmp(mode, "sem") == 0 || strcmp(mode, "msg") == 0) {
		for (int i = 0; i < 2; i++) {
			int id;
			if (mode[0] == 's') {
				id = semget(IPC_PRIVATE, 4, IPC_CREAT | 0600);
			} else {
				id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
				struct {
					long type;
					char text[64];
				} m = {1, "left behind"};
				if (id >= 0 && msgsnd(id, &m, sizeof m.text, 0) < 0) {
					perror("msgsnd");
					return 1;
				}
			}
			if (id < 0) {
				perror(mode);
				return 1;
			}
			printf("%d\n", id);
		}
		return 0;
	}
	if (argc < 4)
		return 2;
	file = argv[2];
	ready = argv[3];
	if (argc > 4)
		content = argv[4];
	// The server: the parent of the shell that runs this.
	pid_t server = 0;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
	FILE *f = fopen(path, "r");
	if (f != NULL) {
		if (fgets(buf, sizeof buf, f) != NULL) {
			char *p = strrchr(buf, ')');
			int ppid;
			if (p != NULL && sscanf(p + 2, "%*c %d", &ppid) == 1)
				server = ppid;
		}
		fclose(f);
	}
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		while (access(ready, F_OK) != 0)
			usleep(1000);
		return 0;
	}
	if (strcmp(mode, "join-group") == 0) {
		if (setpgid(0, getpgid(server)) != 0)
			_exit(1);
	} else {
		setsid();
	}
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	if (strcmp(mode, "daemon") == 0) {
		if (fork() == 0) {
			touch(ready);
			rewrite();
		}
		_exit(0);
	}
	if (strcmp(mode, "join-group") == 0) {
		touch(ready);
		rewrite();
	}
	if (strcmp(mode, "zombie-thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_main, NULL) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	if (strcmp(mode, "clone") == 0) {
		size_t size = 1 << 16;
		char *stack = malloc(size);
		if (stack == NULL || clone(clone_main, stack + size, 0, NULL) < 0)
			_exit(1);
		_exit(0);
	}
	_exit(2);
}
