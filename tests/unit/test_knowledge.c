/* Unit tests of the knowledge store (runtime/src/core/knowledge.c): the sections of a file of each version (the
 * selector's and the throttle's files of version 1 converted), a save that keeps the other modules' sections and
 * converts an old file, a file that is not a knowledge file (or a newer one) left alone, a merge that fails or a
 * lock not had in time leaving the file as it was, and several processes saving to one file at once, in a loop:
 * afterwards every entry of every process is in it and the file parses. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <jansson.h>

#include "core/knowledge.h"

#include "check.h"

static int warnings; /* what the store reported */
void iotame_log_warn(const char *fmt, ...)
{
    (void)fmt;
    warnings++;
}

/* ---- helpers ---- */

static char dir[] = "/tmp/iotame-test-knowledge-XXXXXX";

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0);
    if (f) fclose(f);
}

/* The file's text (static buffer; "" when it cannot be read). */
static const char *text_of(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return buf;
}

static json_t *section_of(const char *text, const char *module)
{
    json_t *s = NULL;
    CHECK(iotame_knowledge_section(text, strlen(text), module, &s) == 0 && json_is_object(s));
    return s;
}

/* A module's merge as simple as the throttle's: fresh's keys replace the section's. */
static int merge_keys(json_t *section, json_t *fresh) { return json_object_update(section, fresh) == 0 ? 0 : -ENOMEM; }

static int merge_refuses(json_t *section, json_t *fresh)
{
    (void)section;
    (void)fresh;
    return -EINVAL;
}

static int save_key(const char *path, const char *module, const char *key, int value)
{
    json_t *fresh = json_pack("{s:i}", key, value);
    int rc = iotame_knowledge_merge(path, module, merge_keys, fresh);
    json_decref(fresh);
    return rc;
}

/* Files in the test's directory whose name contains what (temporary files left behind). */
static int files_with(const char *what)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, what) != NULL;
    if (d) closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* ---- tests ---- */

static void test_the_sections_of_each_version(void)
{
    const char *v2 = "{\"version\": 2, \"modules\": {\"throttle\": {\"read procs=2\": {\"level\": 1}}, \"other\": {}}}";
    json_t *t = section_of(v2, "throttle");
    CHECK(json_integer_value(json_object_get(json_object_get(t, "read procs=2"), "level")) == 1);
    json_t *none = section_of(v2, "collective"); /* a module the file has nothing of: an empty section */
    CHECK(json_object_size(none) == 0);
    /* the selector's file of version 1 is the collective section, the throttle's the throttle's */
    const char *v1_select =
        "{\"version\": 1, \"entries\": [{\"signature\": {\"op\": \"write\"}, \"strategy\": \"x\"}]}";
    json_t *c = section_of(v1_select, "collective");
    CHECK(json_array_size(json_object_get(c, "entries")) == 1);
    json_t *c_none = section_of(v1_select, "throttle");
    CHECK(json_object_size(c_none) == 0);
    json_t *th = section_of("{\"version\": 1, \"throttle\": {\"s\": {\"level\": 2}}}", "throttle");
    CHECK(json_object_get(th, "s") != NULL);
    json_t *empty = section_of("", "collective"); /* an empty file: nothing known yet */
    CHECK(json_object_size(empty) == 0);
    const char *not_ours[] = {"not json", "[1, 2]", "{\"version\": 1}", "{\"version\": 1, \"entries\": 3}",
                              "{\"version\": 3, \"modules\": {}}", "{\"version\": 2, \"modules\": {\"x\": 1}}",
                              "{\"version\": 2, \"entries\": []}", "{\"version\": \"2\", \"modules\": {}}"};
    for (size_t i = 0; i < sizeof not_ours / sizeof *not_ours; i++) {
        json_t *s = (json_t *)1;
        CHECK(iotame_knowledge_section(not_ours[i], strlen(not_ours[i]), "throttle", &s) == -EINVAL && s == NULL);
    }
    json_decref(t);
    json_decref(none);
    json_decref(c);
    json_decref(c_none);
    json_decref(th);
    json_decref(empty);
}

static void test_a_save_converts_an_old_file_and_keeps_the_other_sections(void)
{
    char path[256];
    path_of(path, sizeof path, "old.json");
    put(path, "{\"version\": 1, \"entries\": [{\"signature\": {\"op\": \"read\"}, \"strategy\": \"two_phase\"}]}");
    CHECK(save_key(path, "throttle", "read procs=2 size=2^20", 2) == 0);
    json_t *root = json_loads(text_of(path), 0, NULL);
    CHECK(json_integer_value(json_object_get(root, "version")) == 2);
    json_t *modules = json_object_get(root, "modules");
    CHECK(json_object_size(modules) == 2);
    CHECK(json_array_size(json_object_get(json_object_get(modules, "collective"), "entries")) == 1);
    CHECK(json_integer_value(json_object_get(json_object_get(modules, "throttle"), "read procs=2 size=2^20")) == 2);
    json_decref(root);
    /* the throttle's old file: its levels kept, a new module's section beside them */
    put(path, "{\"version\": 1, \"throttle\": {\"write procs=4 size=2^16\": {\"level\": 3, \"mbs\": 10.5}}}");
    CHECK(save_key(path, "model", "error", 7) == 0);
    json_t *th = section_of(text_of(path), "throttle"), *model = section_of(text_of(path), "model");
    CHECK(json_integer_value(json_object_get(json_object_get(th, "write procs=4 size=2^16"), "level")) == 3);
    CHECK(json_integer_value(json_object_get(model, "error")) == 7);
    json_decref(th);
    json_decref(model);
    /* a missing file is created, of version 2 */
    unlink(path);
    CHECK(save_key(path, "throttle", "k", 1) == 0);
    json_t *fresh = json_loads(text_of(path), 0, NULL);
    CHECK(json_integer_value(json_object_get(fresh, "version")) == 2);
    json_decref(fresh);
    CHECK(files_with(".tmp.") == 0);
}

static void test_a_file_that_is_not_knowledge_is_left_alone(void)
{
    char path[256];
    path_of(path, sizeof path, "theirs.json");
    const char *theirs[] = {"not json", "{\"version\": 1, \"results\": []}", "{\"version\": 3, \"modules\": {}}"};
    for (size_t i = 0; i < sizeof theirs / sizeof *theirs; i++) {
        put(path, theirs[i]);
        int before = warnings;
        CHECK(save_key(path, "throttle", "k", 1) == -EEXIST);
        CHECK(strcmp(text_of(path), theirs[i]) == 0 && warnings == before + 1);
    }
    /* a module's merge that refuses the section it finds: the save is skipped, the file unchanged */
    const char *v2 = "{\"version\": 2, \"modules\": {\"throttle\": {\"k\": 1}}}";
    put(path, v2);
    json_t *fresh = json_object();
    CHECK(iotame_knowledge_merge(path, "throttle", merge_refuses, fresh) == -EINVAL && strcmp(text_of(path), v2) == 0);
    json_decref(fresh);
    CHECK(files_with(".tmp.") == 0);
}

static void test_a_lock_not_had_in_time_skips_the_save(void)
{
    char path[256], lock[300];
    path_of(path, sizeof path, "locked.json");
    snprintf(lock, sizeof lock, "%s.lock", path);
    const char *v2 = "{\"version\": 2, \"modules\": {}}";
    put(path, v2);
    int fd = open(lock, O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0); /* another job holds it and does not let go */
    long long bound = iotame__knowledge_lock_ns;
    iotame__knowledge_lock_ns = 50000000;
    int before = warnings;
    CHECK(save_key(path, "throttle", "k", 1) == -ETIMEDOUT);
    CHECK(strcmp(text_of(path), v2) == 0 && warnings == before + 1);
    CHECK(flock(fd, LOCK_UN) == 0 && close(fd) == 0);
    CHECK(save_key(path, "throttle", "k", 1) == 0); /* once it is free */
    iotame__knowledge_lock_ns = bound;
}

enum { WRITERS = 6, ROUNDS = 40 };

/* One writer: ROUNDS saves of its own keys, into the section of its module (writers alternate between two
 * modules, as the selector and the throttle of two jobs sharing one file). Exits with the saves that failed. */
static void writer(const char *path, int id, int start_fd)
{
    char go;
    if (read(start_fd, &go, 1) != 1) _exit(100);
    int failed = 0;
    for (int r = 0; r < ROUNDS; r++) {
        char key[32];
        snprintf(key, sizeof key, "w%d-r%d", id, r);
        failed += save_key(path, id % 2 ? "throttle" : "collective", key, r) != 0;
    }
    _exit(failed);
}

static void test_processes_saving_at_once_lose_nothing(void)
{
    char path[256];
    path_of(path, sizeof path, "shared.json");
    put(path, "{\"version\": 1, \"entries\": [{\"signature\": {\"op\": \"read\"}, \"strategy\": \"two_phase\"}]}");
    int gate[2];
    CHECK(pipe(gate) == 0);
    pid_t pid[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            close(gate[1]);
            writer(path, i, gate[0]);
        }
        CHECK(pid[i] > 0);
    }
    close(gate[0]);
    char go[WRITERS] = {0};
    CHECK(write(gate[1], go, WRITERS) == WRITERS); /* every writer starts at once */
    close(gate[1]);
    for (int i = 0; i < WRITERS; i++) {
        int status = -1;
        CHECK(pid[i] > 0 && waitpid(pid[i], &status, 0) == pid[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    json_t *root = json_loads(text_of(path), 0, NULL);
    CHECK(root != NULL && json_integer_value(json_object_get(root, "version")) == 2);
    json_t *modules = json_object_get(root, "modules");
    json_t *collective = json_object_get(modules, "collective"), *throttle = json_object_get(modules, "throttle");
    int missing = 0;
    for (int i = 0; i < WRITERS; i++)
        for (int r = 0; r < ROUNDS; r++) {
            char key[32];
            snprintf(key, sizeof key, "w%d-r%d", i, r);
            missing += json_integer_value(json_object_get(i % 2 ? throttle : collective, key)) != r ||
                       !json_object_get(i % 2 ? throttle : collective, key);
        }
    CHECK(missing == 0);
    if (missing) fprintf(stderr, "  %d of %d entries lost\n", missing, WRITERS * ROUNDS);
    CHECK(json_object_size(throttle) == (size_t)(WRITERS / 2 * ROUNDS));
    /* the old file's entries survived the conversion and every save after it */
    CHECK(json_array_size(json_object_get(collective, "entries")) == 1);
    CHECK(json_object_size(collective) == (size_t)((WRITERS + 1) / 2 * ROUNDS) + 1);
    CHECK(files_with(".tmp.") == 0);
    json_decref(root);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_the_sections_of_each_version();
    test_a_save_converts_an_old_file_and_keeps_the_other_sections();
    test_a_file_that_is_not_knowledge_is_left_alone();
    test_a_lock_not_had_in_time_skips_the_save();
    test_processes_saving_at_once_lose_nothing();
    remove_dir();
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
