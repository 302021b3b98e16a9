/* SPDX-License-Identifier: Apache-2.0 */
/* sa_req: parses and validates one OpenAI completion / chat completion body the way vLLM's
 * OpenAI server does (field types, prompt forms, max_tokens vs --max-model-len). */
#ifndef SA_REQ_H
#define SA_REQ_H

#include "sa.h"

/* 0 with r filled, or an HTTP status (400/404) with *msg malloc'd. x_request_id may be NULL. */
int sa_req_parse(struct sa *s, const char *body, size_t len, bool chat, const char *x_request_id,
                 struct sa_req *r, char **msg);
void sa_req_free(struct sa_req *r);

#endif
