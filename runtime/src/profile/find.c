/* profile/find.c: the machine profile of a data file's file system, found without being named each time
 * (docs/calibrate.md, "Where the runtime finds the profile"): the setting collective.profile, else the environment's
 * IOTAME_PROFILE, each a profile file or a directory of them; else $XDG_CONFIG_HOME/iotame/profiles (default
 * ~/.config/iotame/profiles), then PREFIX/share/iotame/profiles beside the installed libiotame.so. In a directory the
 * *.json files are tried in name order and of the valid profiles of the data file's file system the nearest is taken:
 * the one whose filesystem.path is the deepest directory above the file (a layout calibrated in its own directory),
 * else the first; a profile named as a file must be valid and of that file system, or it is refused (the reason goes
 * to the caller).
 * The Python side (iotame.calibrate.discover, `iotame info`) follows the same rule.
 *
 * A profile matches when its filesystem.magic is the statfs type of the data file's directory and its
 * filesystem.device is that directory's device, or the data file lies under its filesystem.path (network file
 * systems number their devices per mount). What was found is kept per directory and setting for the job's life. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <jansson.h>

#include "profile.h"

/* The file system a data file is on: its directory's statfs type and device, and the directory's real path. */
typedef struct {
    unsigned long magic;
    unsigned major, minor;
    char dir[PATH_MAX];
} profile_find_fs_t;

/* The directory of a data path as MPI_File_open got it (ROMIO's "ufs:"-style prefixes removed), into dir[PATH_MAX]. */
static void profile_find_dir_of(const char *data_path, char *dir)
{
    const char *colon = strchr(data_path, ':'), *slash = strchr(data_path, '/');
    if (colon && (!slash || colon < slash) && colon - data_path > 1) data_path = colon + 1;
    snprintf(dir, PATH_MAX, "%s", data_path);
    char *end = strrchr(dir, '/');
    if (!end) snprintf(dir, PATH_MAX, ".");
    else if (end == dir) dir[1] = '\0';
    else *end = '\0';
}

/* The file system of a directory: its statfs type, its device and its real path. */
static int profile_find_fs_of(const char *dir, profile_find_fs_t *fs)
{
    struct statfs sf;
    struct stat st;
    if (statfs(dir, &sf) != 0 || stat(dir, &st) != 0 || !realpath(dir, fs->dir)) return -errno;
    fs->magic = (unsigned long)sf.f_type;
    fs->major = major(st.st_dev);
    fs->minor = minor(st.st_dev);
    return 0;
}

/* How near the profile's filesystem.path is to the data file: its length when the file's directory is that path or
 * lies below it (whole components), else 0. */
static size_t profile_find_nearness(const json_t *root, const profile_find_fs_t *fs)
{
    const char *path = json_string_value(json_object_get(json_object_get(root, "filesystem"), "path"));
    size_t plen = path ? strlen(path) : 0;
    while (plen > 1 && path[plen - 1] == '/') plen--;
    if (plen == 0 || strncmp(fs->dir, path, plen) != 0) return 0;
    return fs->dir[plen] == '\0' || fs->dir[plen] == '/' || plen == 1 ? plen : 0;
}

/* Why the profile's filesystem section is not the data file's, or NULL when it is (into why[size]). */
static const char *profile_find_mismatch(const json_t *root, const profile_find_fs_t *fs, char *why, size_t size)
{
    const json_t *f = json_object_get(root, "filesystem");
    const char *magic = json_string_value(json_object_get(f, "magic"));
    const char *device = json_string_value(json_object_get(f, "device"));
    char mine[32];
    snprintf(mine, sizeof mine, "%u:%u", fs->major, fs->minor);
    if (magic && strtoul(magic, NULL, 16) == fs->magic &&
        ((device && strcmp(device, mine) == 0) || profile_find_nearness(root, fs) > 0))
        return NULL;
    snprintf(why, size, "filesystem: expected the file system of %s (magic 0x%lx, device %s), got magic %s device %s",
             fs->dir, fs->magic, mine, magic ? magic : "none", device ? device : "none");
    return why;
}

/* A 31-bit FNV-1a hash of the profile's text: ranks that read the same profile agree on it; never 0. */
static int profile_find_hash(const char *text, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 16777619u;
    h &= 0x7fffffff;
    return h ? (int)h : 1;
}

static void profile_find_refuse(char **refused, const char *lines)
{
    size_t have = *refused ? strlen(*refused) : 0, add = strlen(lines);
    char *grown = realloc(*refused, have + add + 2);
    if (!grown) return;
    memcpy(grown + have, lines, add);
    if (add && lines[add - 1] != '\n') grown[have + add++] = '\n';
    grown[have + add] = '\0';
    *refused = grown;
}

/* Tries one profile file: 1 when it is valid and matches (into *out, its profile_find_nearness into *near), else 0,
 * and when `named` the reason is added to *refused (a profile found in a directory is passed over quietly unless it
 * is the data file's and invalid). */
static int profile_find_try(const char *file, const profile_find_fs_t *fs, int named, iotame_profile_found_t *out,
                            size_t *near, char **refused)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        if (named) {
            char line[PATH_MAX + 128];
            snprintf(line, sizeof line, "iotame: profile %s: cannot read: %s", file, strerror(errno));
            profile_find_refuse(refused, line);
        }
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    char buf[65536];
    size_t got;
    while (mem && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, mem);
    fclose(f);
    if (!mem || fclose(mem) != 0) {
        free(text);
        return 0;
    }
    json_error_t jerr;
    size_t read_len = len;
    char *read = iotame__profile_unread(text, len, &read_len);
    json_t *root = json_loadb(read ? read : text, read_len, IOTAME_PROFILE_JSON_FLAGS, &jerr); /* checked, then read */
    free(read);
    const int profile = json_is_object(root) &&
                        strcmp(json_string_value(json_object_get(root, "kind")) ?: "", "iotame-machine-profile") == 0;
    char why[PATH_MAX + 256];
    const char *mismatch = profile ? profile_find_mismatch(root, fs, why, sizeof why) : NULL;
    int ok = 0;
    if (profile && mismatch) {
        if (named) {
            char line[2 * PATH_MAX + 300];
            snprintf(line, sizeof line, "iotame: profile %s: %s", file, mismatch);
            profile_find_refuse(refused, line);
        }
    } else if (named || profile) { /* a named file that is no profile is refused by the reader's own lines */
        char *errors = NULL;
        if (iotame_profile_load_parsed(file, root, &jerr, &out->profile, &errors) == 0) {
            snprintf(out->path, sizeof out->path, "%s", file);
            out->hash = profile_find_hash(text, len);
            *near = profile_find_nearness(root, fs);
            ok = 1;
        } else if (errors) {
            profile_find_refuse(refused, errors);
        }
        free(errors);
    }
    json_decref(root);
    free(text);
    return ok;
}

static int profile_find_by_name(const struct dirent *d)
{
    const size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The nearest matching profile of a directory's *.json files (profile_find_nearness), the first in name order of
 * equally near ones. */
static int profile_find_in_dir(const char *dir, const profile_find_fs_t *fs, iotame_profile_found_t *out,
                               char **refused)
{
    struct dirent **names = NULL;
    const int n = scandir(dir, &names, profile_find_by_name, alphasort);
    iotame_profile_found_t *one = n > 0 ? malloc(sizeof *one) : NULL;
    size_t best = 0, near = 0;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        char file[PATH_MAX];
        if (one && snprintf(file, sizeof file, "%s/%s", dir, names[i]->d_name) < (int)sizeof file &&
            profile_find_try(file, fs, 0, one, &near, refused) && (!ok || near > best)) {
            one->found_by = out->found_by;
            *out = *one;
            best = near;
            ok = 1;
        }
        free(names[i]);
    }
    free(one);
    free(names);
    return ok;
}

/* A file or a directory given by name (the setting or the environment). */
static int profile_find_named(const char *name, const profile_find_fs_t *fs, iotame_profile_found_t *out,
                              char **refused)
{
    struct stat st;
    if (stat(name, &st) == 0 && S_ISDIR(st.st_mode)) return profile_find_in_dir(name, fs, out, refused);
    size_t near;
    return profile_find_try(name, fs, 1, out, &near, refused);
}

/* Whether a path's last component is lib or lib64. */
static int profile_find_is_libdir(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strcmp(base, "lib") == 0 || strcmp(base, "lib64") == 0;
}

/* The installed profiles' directory: PREFIX/share/iotame/profiles, PREFIX the parent of libiotame.so's directory (of
 * PREFIX/lib when that is a multiarch one, lib/x86_64-linux-gnu). */
static int profile_find_prefix_dir(char *dir, size_t size)
{
    Dl_info info;
    if (!dladdr((void *)profile_find_prefix_dir, &info) || !info.dli_fname) return 0;
    char lib[PATH_MAX];
    if (!realpath(info.dli_fname, lib)) return 0;
    char *slash = strrchr(lib, '/');
    if (!slash) return 0;
    *slash = '\0'; /* libiotame.so's directory */
    slash = strrchr(lib, '/');
    if (!slash) return 0;
    *slash = '\0';
    if (!profile_find_is_libdir(slash + 1) && profile_find_is_libdir(lib) && (slash = strrchr(lib, '/'))) *slash = '\0';
    return snprintf(dir, size, "%s/share/iotame/profiles", *lib ? lib : "") < (int)size;
}

static int profile_find_search(const profile_find_fs_t *fs, const char *setting, const char *env,
                               iotame_profile_found_t *out, char **refused)
{
    if (setting && *setting) return out->found_by = "setting", profile_find_named(setting, fs, out, refused);
    if (env && *env) return out->found_by = "environment", profile_find_named(env, fs, out, refused);
    out->found_by = "directory";
    char dir[PATH_MAX];
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg ? snprintf(dir, sizeof dir, "%s/iotame/profiles", xdg) < (int)sizeof dir
                    : home && snprintf(dir, sizeof dir, "%s/.config/iotame/profiles", home) < (int)sizeof dir)
        if (profile_find_in_dir(dir, fs, out, refused)) return 1;
    return profile_find_prefix_dir(dir, sizeof dir) && profile_find_in_dir(dir, fs, out, refused);
}

/* Whether a directory holds a file a search would try (a *.json). */
static int profile_find_dir_has_json(const char *dir)
{
    struct dirent **names = NULL;
    const int n = scandir(dir, &names, profile_find_by_name, alphasort);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return n > 0;
}

static int profile_find_is_named(const json_t *v) { return json_is_string(v) && *json_string_value(v); }

int iotame_profile_may_exist(const iotame_config_t *cfg)
{
    if (iotame_config_any(cfg, "collective", "profile", profile_find_is_named)) return 1;
    const char *env = getenv("IOTAME_PROFILE"), *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (env && *env) return 1;
    char dir[PATH_MAX];
    if ((xdg && *xdg ? snprintf(dir, sizeof dir, "%s/iotame/profiles", xdg) < (int)sizeof dir
                     : home && snprintf(dir, sizeof dir, "%s/.config/iotame/profiles", home) < (int)sizeof dir) &&
        profile_find_dir_has_json(dir))
        return 1;
    return profile_find_prefix_dir(dir, sizeof dir) && profile_find_dir_has_json(dir);
}

/* ---- what was found, per directory and setting, for the job's life ---- */

typedef struct profile_find_cached {
    char *key;
    int found;
    iotame_profile_found_t profile;
    char *refused;
    struct profile_find_cached *next;
} profile_find_cached_t;

static pthread_mutex_t profile_find_lock = PTHREAD_MUTEX_INITIALIZER;
static profile_find_cached_t *profile_find_cache;

const iotame_profile_found_t *iotame_profile_find(const char *data_path, const char *setting, const char **refused)
{
    *refused = NULL;
    char dir[PATH_MAX], cwd[PATH_MAX] = "", key[4 * PATH_MAX + 16];
    const char *env = getenv("IOTAME_PROFILE");
    profile_find_dir_of(data_path, dir);
    if (dir[0] != '/' && !getcwd(cwd, sizeof cwd)) return NULL;
    /* keyed by the directory as the application spelled it (and the working directory it is relative to): a later
     * open there asks the file system nothing (on a parallel file system, each query is a round trip to its
     * metadata server inside the application's open) */
    snprintf(key, sizeof key, "%s\n%s\n%s\n%s", cwd, dir, setting ? setting : "", env ? env : "");
    pthread_mutex_lock(&profile_find_lock);
    profile_find_cached_t *c;
    for (c = profile_find_cache; c && strcmp(c->key, key) != 0; c = c->next) {}
    if (!c) {
        profile_find_fs_t fs;
        if (profile_find_fs_of(dir, &fs) == 0 && (c = calloc(1, sizeof *c)) && (c->key = strdup(key))) {
            c->found = profile_find_search(&fs, setting, env, &c->profile, &c->refused);
            c->next = profile_find_cache;
            profile_find_cache = c;
        } else if (c) {
            free(c);
            c = NULL;
        }
    }
    pthread_mutex_unlock(&profile_find_lock);
    if (!c) return NULL;
    *refused = c->refused;
    return c->found ? &c->profile : NULL;
}

const iotame_profile_found_t *iotame_profile_for(const char *data_path, const iotame_file_config_t *fc,
                                                 const char **refused)
{
    const char *setting = json_string_value(iotame_config_setting(fc, "collective", "profile"));
    return iotame_profile_find(data_path, setting && *setting ? setting : NULL, refused);
}
