/*
 * Environment variables. Every variable is one row in a layer's *_env.def
 * file (name, type, default as a value, help); util/env.c collects the rows
 * into one table that drives the strict parsers below and the printout of
 * RMB_INFO / SHMEM_INFO. A variable with our RMB_ prefix that has no row
 * gets a warning, so typos are noticed.
 *
 * Row format, in a .def file:
 *   UTIL_ENV_ROW(NAME, TYPE, "default", "help text")
 * TYPE is BOOL (0/1/yes/no/true/false/on/off), INT, SIZE (bytes with an
 * optional K/M/G/T suffix, powers of 1024) or STRING.
 */
#ifndef UTIL_ENV_H
#define UTIL_ENV_H

#include "util/status.h"

#include <stddef.h>
#include <stdio.h>

typedef enum { UTIL_ENV_BOOL, UTIL_ENV_INT, UTIL_ENV_SIZE, UTIL_ENV_STRING } util_env_type_t;

typedef struct {
    const char *name;
    util_env_type_t type;
    const char *default_value;
    const char *layer;
    const char *help;
} util_env_var_t;

/* Each getter parses the variable, or its row's default when unset. A value
 * that does not parse logs one line naming the variable and returns
 * UTIL_ERR_INVALID; *value_p is set only on success. */
util_status_t util_env_get_bool(const char *name, int *value_p);
util_status_t util_env_get_int(const char *name, long *value_p);
util_status_t util_env_get_size(const char *name, size_t *value_p);
util_status_t util_env_get_string(const char *name, const char **value_p);

/* Parsers shared with command-line handling. */
util_status_t util_env_parse_bool(const char *text, int *value_p);
util_status_t util_env_parse_int(const char *text, long *value_p);
util_status_t util_env_parse_size(const char *text, size_t *value_p);

/* Warns once about RMB_* variables that have no row. */
void util_env_check_unknown(void);
/* Prints every row with its current value (for RMB_INFO=1 / SHMEM_INFO=1). */
void util_env_print(FILE *stream);
/* The rows themselves, in layering order (oshinfo, the rmb(7) generator):
 * i in 0..util_env_count()-1; util_env_row(NAME) is NULL without a row. */
int util_env_count(void);
const util_env_var_t *util_env_at(int i);
const util_env_var_t *util_env_row(const char *name);
/* "bool", "int", "size" or "string". */
const char *util_env_type_name(util_env_type_t type);
/* Whether text is a valid value of type (the getters' parsers). */
int util_env_valid(util_env_type_t type, const char *text);

#endif
