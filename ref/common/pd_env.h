/* SPDX-License-Identifier: Apache-2.0 */
/* pd_env: the one table of environment variables pdkv reads (name, type, range, default,
 * bad-value policy, doc, commands) and the typed API that reads them by that table. */
#ifndef PD_ENV_H
#define PD_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pd_env_type {
	PD_ENV_INT,   /* decimal integer in [lo, hi] */
	PD_ENV_SIZE,  /* byte size, suffixes K/M/G (pd_parse_size), in [lo, hi] */
	PD_ENV_BOOL,  /* 0|1 (also false|true) */
	PD_ENV_SET,   /* on when set to anything (Mooncake's getenv() != NULL style) */
	PD_ENV_ENUM,  /* one of choices ("a|b|c") */
	PD_ENV_FLOAT, /* decimal number in (lo, hi) */
	PD_ENV_STR,   /* free text (an address, an id, a version) */
	PD_ENV_PATH,  /* a file or directory */
};

/* What a value outside the row's type or range does. */
enum pd_env_policy {
	PD_ENV_WARN,   /* one warning naming the variable, then the default */
	PD_ENV_IGNORE, /* the default, silently (older readers; new ones use WARN) */
	PD_ENV_ERROR,  /* the command refuses to start, naming the variable */
};

/* Which commands read a variable (man pages' ENVIRONMENT, pdkv doctor --env). */
enum {
	PD_ENV_C_PDKV = 1u << 0,
	PD_ENV_C_RUN = 1u << 1,
	PD_ENV_C_CONFIG = 1u << 2,
	PD_ENV_C_PORTS = 1u << 3,
	PD_ENV_C_BENCH = 1u << 4,
	PD_ENV_C_REPORT = 1u << 5,
	PD_ENV_C_DOCTOR = 1u << 6,
	PD_ENV_C_STANDIN = 1u << 7,
	PD_ENV_C_PROXY = 1u << 8,
	PD_ENV_C_METASERVER = 1u << 9,
	PD_ENV_C_BOOTSTRAP = 1u << 10,
	PD_ENV_C_UPGRADE = 1u << 11,
	PD_ENV_C_DRIFT = 1u << 12,
	PD_ENV_C_INTEROP = 1u << 13,
	PD_ENV_C_MAKE = 1u << 14, /* read by the build's scripts (make test/bench/fuzz/...) */
	PD_ENV_C_NCMDS = 15,
};

/* Row flags. */
enum {
	PD_ENV_F_SECRET = 1u << 0, /* doctor prints "(hidden)", never the value */
	PD_ENV_F_TEST = 1u << 1,   /* meant for pdkv's own tests */
	PD_ENV_F_SCRIPT = 1u << 2, /* read by a script or make, not by a C program */
};

struct pd_env_var {
	const char *name;
	enum pd_env_type type;
	int64_t lo, hi;      /* INT/SIZE/FLOAT range (inclusive for INT/SIZE) */
	const char *def;     /* the default as a user would write it; NULL: unset = off/none */
	const char *choices; /* ENUM: "a|b|c" */
	enum pd_env_policy bad;
	unsigned cmds, flags;
	const char *doc; /* one line */
};

#define PD_ENV_MAX_ROWS 256 /* the table's capacity (a static assert keeps it) */

size_t pd_env_count(void);
const struct pd_env_var *pd_env_at(size_t i);
/* The row of name, or NULL. */
const struct pd_env_var *pd_env_find(const char *name);
/* "pdkv-run" etc. for one PD_ENV_C_* bit; NULL for anything else. */
const char *pd_env_cmd_name(unsigned bit);
/* The PD_ENV_C_* bit of a command name ("pdkv-run", "run", "make"), 0 when unknown. */
unsigned pd_env_cmd_bit(const char *name);

/* 0 when value suits the row, else -1 with why in msg ("expected an integer 5..86400"). */
int pd_env_check(const struct pd_env_var *v, const char *value, char *msg, size_t msz);

/* Typed reads. Each returns 1 when the variable is set (non-empty) to a good value (*out is
 * it), 0 when unset or empty (*out is the row's default, 0/false when the row's default is not
 * a number), -1 when the value is bad: *out is the default, and per the row's policy one
 * warning naming the variable, its value and what is expected was logged (WARN), nothing was
 * (IGNORE), or the caller must refuse to start (ERROR: pd_env_error() has the message). A name
 * not in the table logs an error and reads as unset: the table is the one list. */
int pd_env_int(const char *name, int64_t *out);
int pd_env_size(const char *name, uint64_t *out);
int pd_env_bool(const char *name, bool *out);
int pd_env_float(const char *name, double *out);
/* pd_env_int of name, or, when name is unset, of older (another spelling of the same setting:
 * MC_MIN_PRC_PORT for MC_MIN_RPC_PORT, NCCL_IB_GID_INDEX for MC_GID_INDEX). older may be NULL. */
int pd_env_int_or(const char *name, const char *older, int64_t *out);
/* STR/PATH/ENUM/SET: the value when set and non-empty (and valid for ENUM), else the row's
 * default (NULL when none). */
const char *pd_env_str(const char *name);
/* SET rows: whether the variable is set at all (even empty, as Mooncake tests it). */
bool pd_env_set(const char *name);
/* The text of a row's variable as the environment has it (NULL unset, "" set empty), unchecked:
 * for readers that diagnose the text themselves (the config checker, pdkv doctor) or need the
 * set-but-empty case (the proxy's "Bearer None"). A name not in the table logs an error. */
const char *pd_env_raw(const char *name);
/* "NAME=\"value\": expected ..." for the last bad value an ERROR row refused (this thread). */
const char *pd_env_error(void);

#endif
