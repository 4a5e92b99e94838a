/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[512] = "no error";

const char *tacos_last_error(void) { return last_error; }

int tacos_error(int code, const char *fmt, ...)
{
    char msg[sizeof last_error]; /* the arguments may quote last_error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof msg);
    return code;
}
