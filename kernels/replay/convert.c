/* The converter from Darshan logs and statistics files to replay specs, run by rank 0 of the kernel. */
#define _GNU_SOURCE /* mkstemps */
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/run.h"
#include "common/textfile.h"
#include "replay/convert.h"

bool replay_is_spec(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i])) i++;
    if (i == len || text[i] != '{') return false;
    json_t *root = json_loadb(text, len, 0, NULL);
    if (!root) return true;
    bool spec = json_is_object(root) && json_object_get(root, "replay");
    json_decref(root);
    return spec;
}

/* The converter program: $IOTAME_CLI, else iotame on PATH, else <dir of this program>/../../.venv/bin/iotame (the
 * source tree's, for a kernel in build/kernels). */
static void replay_convert_cli(char *out, size_t n)
{
    const char *env = getenv("IOTAME_CLI");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, n, "%.*s/iotame", (int)len, p);
        if (len > 0 && access(out, X_OK) == 0) return;
        p += len;
        if (*p == ':') p++;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    snprintf(out, n, "%s/../../.venv/bin/iotame", dirname(exe));
}

/* Runs argv, its stdout and stderr into msg (truncated to n). Returns the exit status, or -1 when it did not run. */
static int replay_convert_exec(char *const argv[], char *msg, size_t n)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    size_t used = 0;
    char chunk[4096];
    ssize_t got;
    while ((got = read(pipefd[0], chunk, sizeof chunk)) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        size_t take = (size_t)got < n - 1 - used ? (size_t)got : n - 1 - used;
        memcpy(msg + used, chunk, take);
        used += take;
    }
    msg[used] = '\0';
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

char *replay_convert(const char *src, size_t *len)
{
    char cli[PATH_MAX + 16], tmp[PATH_MAX];
    replay_convert_cli(cli, sizeof cli);
    const char *tmpdir = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/iotame-replay-XXXXXX.json", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(tmp, 5);
    if (fd < 0) {
        iotame_error("cannot create a temporary file %s for the converted spec: %s", tmp, strerror(errno));
        return NULL;
    }
    close(fd);
    char *argv[] = {cli, "replay", "spec", (char *)src, "--out", tmp, NULL};
    char msg[8192] = "", status[128];
    int st = replay_convert_exec(argv, msg, sizeof msg);
    char *text = NULL;
    if (st != 0) {
        size_t m = strlen(msg);
        while (m > 0 && isspace((unsigned char)msg[m - 1])) msg[--m] = '\0';
        if (st < 0) snprintf(status, sizeof status, "could not start it: %s", strerror(errno));
        else snprintf(status, sizeof status, "exit status %d", st);
        iotame_usage_error("%s is not a replay spec, and the converter `%s replay spec %s` failed (%s)%s%s", src, cli,
                           src, status, m ? ": " : "", msg);
    } else {
        text = iotame_text_read(tmp, len);
    }
    unlink(tmp);
    return text;
}
