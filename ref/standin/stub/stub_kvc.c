/* stub_kvc: weak fallbacks for the connector API, linked only while ref/kvc is not built into
 * this checkout; the real library's strong symbols win as soon as it is linked. */
#include <string.h>

#include "kvc/kvc.h"

#define WEAK __attribute__((weak))

WEAK int kvc_create(const struct kvc_opts *o, struct kvc **out)
{
	(void)o;
	*out = NULL;
	return KVC_ERR_CONFIG;
}
WEAK void kvc_destroy(struct kvc *c)
{
	(void)c;
}
WEAK bool kvc_ready(const struct kvc *c)
{
	(void)c;
	return false;
}
WEAK int kvc_insert(struct kvc *c, const struct kvc_item *it)
{
	(void)c;
	(void)it;
	return KVC_ERR_CLOSED;
}
WEAK int kvc_drop_select(struct kvc *c, const int64_t *tokens, size_t ntokens, struct kvc_item *out)
{
	(void)c;
	(void)tokens;
	(void)ntokens;
	memset(out, 0, sizeof(*out));
	return KVC_ERR_CLOSED;
}
WEAK void kvc_item_free(struct kvc_item *it)
{
	(void)it;
}
WEAK void kvc_get_stats(const struct kvc *c, struct kvc_stats *s)
{
	(void)c;
	memset(s, 0, sizeof(*s));
}
WEAK const char *kvc_strerror(int err)
{
	(void)err;
	return "connector library (ref/kvc) not built into this pdkv-standin";
}
