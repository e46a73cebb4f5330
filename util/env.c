#include "util/env.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* The one registry: every layer's rows, in layering order. A layer not
 * built still lists its rows; they are harmless documentation then. */
static const util_env_var_t util_env_table[] = {
#define UTIL_ENV_ROW(_name, _type, _default, _help)                                                \
    {#_name, UTIL_ENV_##_type, _default, UTIL_ENV_LAYER, _help},
#define UTIL_ENV_LAYER "util"
#include "util/util_env.def"
#undef UTIL_ENV_LAYER
#define UTIL_ENV_LAYER "bootstrap"
#include "bootstrap/bootstrap_env.def"
#undef UTIL_ENV_LAYER
#define UTIL_ENV_LAYER "btl"
#include "btl/btl_env.def"
#undef UTIL_ENV_LAYER
#define UTIL_ENV_LAYER "rmalloc"
#include "rmalloc/rmalloc_env.def"
#undef UTIL_ENV_LAYER
#define UTIL_ENV_LAYER "rpipe"
#include "rpipe/rpipe_env.def"
#undef UTIL_ENV_LAYER
#define UTIL_ENV_LAYER "shmem"
#include "shmem/shmem_env.def"
#undef UTIL_ENV_LAYER
#undef UTIL_ENV_ROW
};

#define UTIL_ENV_COUNT (sizeof(util_env_table) / sizeof(util_env_table[0]))

static const util_env_var_t *util_env_find(const char *name)
{
    for (size_t i = 0; i < UTIL_ENV_COUNT; i++) {
        if (strcmp(util_env_table[i].name, name) == 0) {
            return &util_env_table[i];
        }
    }
    return NULL;
}

util_status_t util_env_parse_bool(const char *text, int *value_p)
{
    static const char *const yes[] = {"1", "yes", "y", "true", "on"};
    static const char *const no[] = {"0", "no", "n", "false", "off"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *value_p = 1;
            return UTIL_OK;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *value_p = 0;
            return UTIL_OK;
        }
    }
    return UTIL_ERR_INVALID;
}

util_status_t util_env_parse_int(const char *text, long *value_p)
{
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0') {
        return UTIL_ERR_INVALID;
    }
    *value_p = value;
    return UTIL_OK;
}

util_status_t util_env_parse_size(const char *text, size_t *value_p)
{
    unsigned long long value, scale = 1;
    char *end;

    while (isspace((unsigned char)*text)) {
        text++;
    }
    if (!isdigit((unsigned char)*text)) {
        return UTIL_ERR_INVALID; /* rejects "-1", which strtoull would wrap */
    }
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno != 0) {
        return UTIL_ERR_INVALID;
    }
    switch (toupper((unsigned char)*end)) {
    case 'K':
        scale = 1ULL << 10;
        end++;
        break;
    case 'M':
        scale = 1ULL << 20;
        end++;
        break;
    case 'G':
        scale = 1ULL << 30;
        end++;
        break;
    case 'T':
        scale = 1ULL << 40;
        end++;
        break;
    default:
        break;
    }
    if (scale > 1 && (*end == 'i' || *end == 'I')) {
        end++;
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0' || (value != 0 && scale > SIZE_MAX / value)) {
        return UTIL_ERR_INVALID;
    }
    *value_p = (size_t)(value * scale);
    return UTIL_OK;
}

static util_status_t util_env_lookup(const char *name, util_env_type_t type, const char **text_p,
                                     const util_env_var_t **var_p)
{
    const util_env_var_t *var = util_env_find(name);
    const char *text;

    if (var == NULL || var->type != type) {
        util_error("internal: environment variable %s has no row of this type", name);
        return UTIL_ERR_INVALID;
    }
    text = getenv(name);
    *text_p = (text != NULL) ? text : var->default_value;
    *var_p = var;
    return UTIL_OK;
}

static util_status_t util_env_bad_value(const char *name, const char *text, const char *expected)
{
    util_error("%s=\"%s\" is not valid: expected %s", name, text, expected);
    return UTIL_ERR_INVALID;
}

util_status_t util_env_get_bool(const char *name, int *value_p)
{
    const util_env_var_t *var;
    const char *text;
    util_status_t status = util_env_lookup(name, UTIL_ENV_BOOL, &text, &var);

    if (status != UTIL_OK) {
        return status;
    }
    if (util_env_parse_bool(text, value_p) != UTIL_OK) {
        return util_env_bad_value(name, text, "0/1, yes/no, true/false or on/off");
    }
    return UTIL_OK;
}

util_status_t util_env_get_int(const char *name, long *value_p)
{
    const util_env_var_t *var;
    const char *text;
    util_status_t status = util_env_lookup(name, UTIL_ENV_INT, &text, &var);

    if (status != UTIL_OK) {
        return status;
    }
    if (util_env_parse_int(text, value_p) != UTIL_OK) {
        return util_env_bad_value(name, text, "an integer");
    }
    return UTIL_OK;
}

util_status_t util_env_get_size(const char *name, size_t *value_p)
{
    const util_env_var_t *var;
    const char *text;
    util_status_t status = util_env_lookup(name, UTIL_ENV_SIZE, &text, &var);

    if (status != UTIL_OK) {
        return status;
    }
    if (util_env_parse_size(text, value_p) != UTIL_OK) {
        return util_env_bad_value(name, text,
                                  "a size in bytes with an optional K, M, G or T suffix");
    }
    return UTIL_OK;
}

util_status_t util_env_get_string(const char *name, const char **value_p)
{
    const util_env_var_t *var;
    return util_env_lookup(name, UTIL_ENV_STRING, value_p, &var);
}

void util_env_check_unknown(void)
{
    for (char **env = environ; env != NULL && *env != NULL; env++) {
        const char *eq = strchr(*env, '=');
        char name[128];
        size_t len;

        if (strncmp(*env, "RMB_", 4) != 0 || eq == NULL) {
            continue;
        }
        len = (size_t)(eq - *env);
        if (len >= sizeof(name)) {
            len = sizeof(name) - 1;
        }
        memcpy(name, *env, len);
        name[len] = '\0';
        if (util_env_find(name) == NULL) {
            util_warn("unknown environment variable %s (misspelled? RMB_INFO=1 lists them all)",
                      name);
        }
    }
}

void util_env_print(FILE *stream)
{
    for (size_t i = 0; i < UTIL_ENV_COUNT; i++) {
        const util_env_var_t *var = &util_env_table[i];
        const char *set = getenv(var->name);

        fprintf(stream, "  %-28s %-6s %-10s = %-12s (default %s) %s\n", var->name,
                util_env_type_name(var->type), var->layer, set ? set : var->default_value,
                var->default_value, var->help);
    }
}

int util_env_count(void)
{
    return (int)UTIL_ENV_COUNT;
}

const util_env_var_t *util_env_at(int i)
{
    return (i >= 0 && (size_t)i < UTIL_ENV_COUNT) ? &util_env_table[i] : NULL;
}

const util_env_var_t *util_env_row(const char *name)
{
    return util_env_find(name);
}

const char *util_env_type_name(util_env_type_t type)
{
    static const char *const names[] = {"bool", "int", "size", "string"};

    return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

int util_env_valid(util_env_type_t type, const char *text)
{
    int flag;
    long num;
    size_t size;

    switch (type) {
    case UTIL_ENV_BOOL:
        return util_env_parse_bool(text, &flag) == UTIL_OK;
    case UTIL_ENV_INT:
        return util_env_parse_int(text, &num) == UTIL_OK;
    case UTIL_ENV_SIZE:
        return util_env_parse_size(text, &size) == UTIL_OK;
    default:
        return 1;
    }
}
