/* SPDX-License-Identifier: Apache-2.0 */
/* sa_req: parses and validates one OpenAI completion / chat completion body the way vLLM's
 * OpenAI server does; messages are rendered with mdl's ChatML template and tokenized. */
#include "sa_req.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "pd_util.h"

void sa_req_free(struct sa_req *r)
{
	free(r->tokens);
	r->tokens = NULL;
	free(r->kvp.text);
	r->kvp.text = NULL;
	free(r->kvtp_out);
	r->kvtp_out = NULL;
	for (int i = 0; i < SA_MAX_TP; i++) {
		free(r->blk[i]);
		r->blk[i] = NULL;
		for (int st = 0; st < SA_MAX_PP - 1; st++) {
			free(r->bst[st][i]);
			r->bst[st][i] = NULL;
		}
	}
}

static bool is_int(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	       fabs(v->valuedouble) < 9e15;
}

static void copy_str(const cJSON *o, const char *k, char *out, size_t outsz)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsString(v) && strlen(v->valuestring) < outsz)
		snprintf(out, outsz, "%s", v->valuestring);
}

/* kv_transfer_params: dict | null. Fields are read loosely (the connector validates them). */
static int parse_kvtp(const cJSON *v, struct sa_req *r, char **msg)
{
	const cJSON *p;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v)) {
		*msg = pd_asprintf("kv_transfer_params: Input should be a valid dictionary");
		return 400;
	}
	r->kvp.present = true;
	r->kvp.text = cJSON_PrintUnformatted(v);
	r->kvp.do_remote_decode =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "do_remote_decode"));
	r->kvp.do_remote_prefill =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "do_remote_prefill"));
	copy_str(v, "remote_host", r->kvp.remote_host, sizeof(r->kvp.remote_host));
	copy_str(v, "remote_engine_id", r->kvp.remote_engine_id, sizeof(r->kvp.remote_engine_id));
	copy_str(v, "remote_bootstrap_addr", r->kvp.bootstrap, sizeof(r->kvp.bootstrap));
	copy_str(v, "transfer_id", r->kvp.transfer_id, sizeof(r->kvp.transfer_id));
	p = cJSON_GetObjectItemCaseSensitive(v, "remote_port");
	if (is_int(p) && p->valuedouble > 0 && p->valuedouble < 65536) {
		r->kvp.has_port = true;
		r->kvp.remote_port = (int64_t)p->valuedouble;
	}
	return 0;
}

/* A 400 with its message, from the request parsers below (they take char **msg). */
#define BAD(...)                                                                                   \
	do {                                                                                       \
		*msg = pd_asprintf(__VA_ARGS__);                                                   \
		return 400;                                                                        \
	} while (0)

static int ids_from_array(const cJSON *a, int64_t **ids, size_t *n)
{
	size_t k = 0, cnt = (size_t)cJSON_GetArraySize(a);
	const cJSON *e;
	int64_t *v = malloc((cnt ? cnt : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	cJSON_ArrayForEach(e, a)
	{
		if (!is_int(e) || e->valuedouble < 0 || e->valuedouble >= MDL_VOCAB) {
			free(v);
			return -EINVAL;
		}
		v[k++] = (int64_t)e->valuedouble;
	}
	*ids = v;
	*n = k;
	return 0;
}

/* Chat messages -> template text. content: string, null, or [{"type":"text","text":...}]. */
static char *render_chat(const cJSON *msgs, char **msg)
{
	size_t n = (size_t)cJSON_GetArraySize(msgs), i = 0;
	struct mdl_msg *m = calloc(n ? n : 1, sizeof(*m));
	char **owned = calloc(n ? n : 1, sizeof(*owned));
	const cJSON *e;
	char *out = NULL;

	if (!m || !owned)
		goto out;
	cJSON_ArrayForEach(e, msgs)
	{
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");

		if (!cJSON_IsObject(e) || !cJSON_IsString(role)) {
			*msg = pd_asprintf("messages[%zu]: expected an object with a string 'role'",
			                   i);
			goto out;
		}
		m[i].role = role->valuestring;
		if (!content || cJSON_IsNull(content)) {
			m[i].content = "";
		} else if (cJSON_IsString(content)) {
			m[i].content = content->valuestring;
		} else if (cJSON_IsArray(content)) {
			size_t len = 1;
			const cJSON *p;

			cJSON_ArrayForEach(p, content)
			{
				const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");

				if (!cJSON_IsString(t)) {
					*msg = pd_asprintf("messages[%zu].content: only parts of "
					                   "type 'text' with a string 'text' are "
					                   "supported",
					                   i);
					goto out;
				}
				len += strlen(t->valuestring);
			}
			owned[i] = calloc(1, len);
			if (!owned[i])
				goto out;
			cJSON_ArrayForEach(p, content) strcat(
			    owned[i], cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring);
			m[i].content = owned[i];
		} else {
			*msg = pd_asprintf("messages[%zu].content: expected a string, a list of "
			                   "parts or null",
			                   i);
			goto out;
		}
		i++;
	}
	out = mdl_chat_template(m, n);
out:
	for (size_t k = 0; owned && k < n; k++)
		free(owned[k]);
	free(owned);
	free(m);
	return out;
}

/* The first raw control byte (< 0x20) inside a JSON string, or a raw NUL anywhere: JSON wants
 * them escaped, and vLLM's parser (Python json, strict) refuses them; cJSON would keep the
 * string and cut it at the NUL. -1 when there is none. */
static long raw_control(const char *b, size_t len)
{
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c == 0 || (in_str && c < 0x20))
			return (long)i;
		if (!in_str) {
			in_str = c == '"';
		} else if (esc) {
			esc = false;
		} else if (c == '\\') {
			esc = true;
		} else if (c == '"') {
			in_str = false;
		}
	}
	return -1;
}

/* The context-length error, checked on the token count before the prompt is tokenized (the
 * byte tokenizer gives one token per byte, so the count is known from the length). */
#define TOO_LONG(n)                                                                                \
	BAD("This model's maximum context length is %lld tokens. However, your request has "       \
	    "%zu input tokens. Please reduce the length of the input messages.",                   \
	    (long long)maxlen, (size_t)(n))

static const char *match_model(struct sa *s, const char *name)
{
	for (int i = 0; i < s->o.nserved; i++)
		if (!strcmp(name, s->o.served[i]))
			return s->o.served[i];
	return !strcmp(name, s->o.model) ? s->o.served[0] : NULL;
}

/* "cmpl-<X-Request-Id>" / "chatcmpl-..." (non-printables made '_'), else a random one. */
static void set_id(struct sa_req *r, bool chat, const char *x_request_id)
{
	char rnd[40];

	if (x_request_id && *x_request_id && strlen(x_request_id) < 64) {
		snprintf(r->id, sizeof(r->id), "%s-%s", chat ? "chatcmpl" : "cmpl", x_request_id);
		for (char *p = r->id; *p; p++)
			if (*p < 0x21 || *p > 0x7e)
				*p = '_';
	} else {
		snprintf(rnd, sizeof(rnd), "%016llx%08x", (unsigned long long)pd_now_ns(),
		         (unsigned)random());
		snprintf(r->id, sizeof(r->id), "%s-%s", chat ? "chatcmpl" : "cmpl", rnd);
	}
}

/* The body as a JSON object in *j (set even when it is not an object, for the caller to
 * delete). 0 or 400. */
static int parse_body(const char *body, size_t len, cJSON **j, char **msg)
{
	long at;

	if (!body || !len)
		BAD("request body is empty; expected a JSON object");
	at = raw_control(body, len);
	if (at >= 0)
		BAD("JSON decode error: invalid control character 0x%02x at byte %ld of "
		    "the "
		    "request body (control characters in strings must be escaped, e.g. "
		    "\\u0000)",
		    (unsigned char)body[at], at);
	*j = cJSON_ParseWithLength(body, len);
	if (!*j)
		BAD("JSON decode error: invalid JSON near byte %ld of the request body",
		    cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - body) : 0L);
	if (!cJSON_IsObject(*j))
		BAD("request body: expected a JSON object");
	return 0;
}

/* "model": one of the served names or the model path; 404 for any other. */
static int parse_model(struct sa *s, const cJSON *j, struct sa_req *r, char **msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "model");

	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v))
			BAD("model: expected a string");
		r->model_name = match_model(s, v->valuestring);
		if (!r->model_name) {
			*msg = pd_asprintf("The model `%s` does not exist.", v->valuestring);
			return 404;
		}
	}
	return 0;
}

/* stream, stream_options, n, temperature, ignore_eos. */
static int parse_sampling(const cJSON *j, struct sa_req *r, char **msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "stream");

	if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
		BAD("stream: expected a boolean");
	r->stream = cJSON_IsTrue(v);
	v = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
	if (v && !cJSON_IsNull(v)) {
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(v, "include_usage");

		if (!cJSON_IsObject(v) || (iu && !cJSON_IsBool(iu) && !cJSON_IsNull(iu)))
			BAD("stream_options: expected {\"include_usage\": true|false}");
		if (!r->stream)
			BAD("Stream options can only be defined when `stream=True`.");
		r->include_usage = cJSON_IsTrue(iu);
	}
	v = cJSON_GetObjectItemCaseSensitive(j, "n");
	if (v && !cJSON_IsNull(v) && !(is_int(v) && v->valuedouble == 1))
		BAD("n: pdkv-standin generates one choice per request (n=1)");
	v = cJSON_GetObjectItemCaseSensitive(j, "temperature");
	if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble >= 0))
		BAD("temperature: expected a number >= 0");
	v = cJSON_GetObjectItemCaseSensitive(j, "ignore_eos");
	if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
		BAD("ignore_eos: expected a boolean");
	r->ignore_eos = cJSON_IsTrue(v);
	return 0;
}

/* max_completion_tokens (chat) or max_tokens into *mt (NULL when absent), checked >= 1. */
static int parse_max_tokens(const cJSON *j, bool chat, const cJSON **mt, char **msg)
{
	*mt = chat ? cJSON_GetObjectItemCaseSensitive(j, "max_completion_tokens") : NULL;
	if (!*mt || cJSON_IsNull(*mt))
		*mt = cJSON_GetObjectItemCaseSensitive(j, "max_tokens");
	if (*mt && cJSON_IsNull(*mt))
		*mt = NULL;
	if (*mt) {
		if (!is_int(*mt))
			BAD("max_tokens: expected an integer");
		if ((*mt)->valuedouble < 1)
			BAD("max_tokens must be at least 1, got %lld.",
			    (long long)(*mt)->valuedouble);
	}
	return 0;
}

/* Chat: "messages" rendered with the template, then tokenized into r->tokens. */
static int parse_messages(const cJSON *j, int64_t maxlen, struct sa_req *r, char **msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "messages");
	char *text;

	if (!v)
		BAD("messages: Field required");
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1)
		BAD("messages: expected a non-empty list of messages");
	text = render_chat(v, msg);
	if (!text) {
		if (!*msg)
			*msg = pd_asprintf("out of memory rendering the chat template");
		return 400;
	}
	if ((int64_t)strlen(text) >= maxlen) {
		size_t n = strlen(text);
		free(text);
		TOO_LONG(n);
	}
	if (mdl_tokenize(text, strlen(text), &r->tokens, &r->ntok)) {
		free(text);
		BAD("out of memory tokenizing");
	}
	free(text);
	return 0;
}

/* Completion: "prompt" as a string or token ids (or a batch of one) into r->tokens. */
static int parse_prompt(const cJSON *j, int64_t maxlen, struct sa_req *r, char **msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "prompt");

	if (!v)
		BAD("prompt: Field required");
	/* A one-element batch is the same as its element. */
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 &&
	    (cJSON_IsString(v->child) || cJSON_IsArray(v->child)))
		v = v->child;
	else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 1 &&
	         (cJSON_IsString(v->child) || cJSON_IsArray(v->child)))
		BAD("prompt: pdkv-standin serves one prompt per request, got a batch of %d",
		    cJSON_GetArraySize(v));
	if (cJSON_IsString(v) && (int64_t)strlen(v->valuestring) >= maxlen)
		TOO_LONG(strlen(v->valuestring));
	if (cJSON_IsArray(v) && (int64_t)cJSON_GetArraySize(v) >= maxlen)
		TOO_LONG(cJSON_GetArraySize(v));
	if (cJSON_IsString(v)) {
		if (mdl_tokenize(v->valuestring, strlen(v->valuestring), &r->tokens, &r->ntok))
			BAD("out of memory tokenizing");
	} else if (cJSON_IsArray(v)) {
		int ret = ids_from_array(v, &r->tokens, &r->ntok);

		if (ret == -EINVAL)
			BAD("prompt: token ids must be integers in 0..%d (byte tokenizer, "
			    "%d = EOS)",
			    MDL_VOCAB - 1, MDL_EOS);
		if (ret)
			BAD("out of memory");
	} else {
		BAD("prompt: expected a string or a list of token ids");
	}
	return 0;
}

/* The token count against max_model_len, and r->max_tokens (vLLM's defaults when unset). */
static int check_length(const cJSON *mt, int64_t maxlen, bool chat, struct sa_req *r, char **msg)
{
	if (r->ntok == 0)
		BAD("The prompt cannot be empty.");
	if ((int64_t)r->ntok >= maxlen)
		TOO_LONG(r->ntok);
	if (mt) {
		r->max_tokens = (int64_t)mt->valuedouble;
		if ((int64_t)r->ntok + r->max_tokens > maxlen)
			BAD("This model's maximum context length is %lld tokens. However, you "
			    "requested %lld tokens (%zu in the messages, %lld in the completion). "
			    "Please reduce the length of the messages or completion.",
			    (long long)maxlen, (long long)r->ntok + (long long)r->max_tokens,
			    r->ntok, (long long)r->max_tokens);
	} else {
		r->max_tokens = maxlen - (int64_t)r->ntok;
		if (!chat && r->max_tokens > 16)
			r->max_tokens = 16; /* vLLM's CompletionRequest default */
	}
	return 0;
}

/* Every field of a parsed body object, in vLLM's order of complaints. */
static int parse_fields(struct sa *s, const cJSON *j, bool chat, struct sa_req *r, char **msg)
{
	int64_t maxlen = s->o.max_model_len;
	const cJSON *mt = NULL;
	int status;

	if ((status = parse_model(s, j, r, msg)) ||
	    (status =
	         parse_kvtp(cJSON_GetObjectItemCaseSensitive(j, "kv_transfer_params"), r, msg)) ||
	    (status = parse_sampling(j, r, msg)) || (status = parse_max_tokens(j, chat, &mt, msg)))
		return status;
	status = chat ? parse_messages(j, maxlen, r, msg) : parse_prompt(j, maxlen, r, msg);
	if (status)
		return status;
	return check_length(mt, maxlen, chat, r, msg);
}

int sa_req_parse(struct sa *s, const char *body, size_t len, bool chat, const char *x_request_id,
                 struct sa_req *r, char **msg)
{
	cJSON *j = NULL;
	int status;

	memset(r, 0, sizeof(*r));
	*msg = NULL;
	r->chat = chat;
	r->t0_ns = pd_now_ns();
	r->model_name = s->o.served[0];
	set_id(r, chat, x_request_id);
	status = parse_body(body, len, &j, msg);
	if (!status)
		status = parse_fields(s, j, chat, r, msg);
	cJSON_Delete(j);
	if (status)
		sa_req_free(r);
	return status;
}
