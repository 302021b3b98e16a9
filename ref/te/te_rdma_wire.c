/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma_wire: the RDMA transport's JSON that needs no device — the Connection handshake body
 * in both of Mooncake's forms (docs/handshake.md) and the NIC priority matrix as Mooncake publishes
 * it. */
#include "te_rdma.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *te_rdma_hs_encode(const struct te_rdma_hs *h, bool current)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "qp_num");
	char *s;

	if (current) {
		/* jsoncpp writes an empty payload and lid 0 too; ready_ack only when supported */
		cJSON_AddStringToObject(o, "local_gid", h->gid);
		cJSON_AddItemToObject(o, "local_lid", cJSON_CreateNumber(h->lid));
		cJSON_AddStringToObject(o, "payload", "");
		cJSON_AddBoolToObject(o, "ready_ack", h->ready_ack);
	}
	cJSON_AddStringToObject(o, "local_nic_path", h->local_path);
	cJSON_AddStringToObject(o, "peer_nic_path", h->peer_path);
	for (int i = 0; i < h->nqpn && i < TE_RDMA_MAX_QP_PER_EP; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(h->qpn[i]));
	cJSON_AddStringToObject(o, "reply_msg", h->reply_msg);
	s = te_json_fast_write(o);
	cJSON_Delete(o);
	return s;
}

static int copy_str(const cJSON *o, const char *key, char *dst, size_t len, bool required)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	const char *v = cJSON_GetStringValue(it);

	if (!it && !required) {
		dst[0] = 0;
		return 0;
	}
	if (!v || strlen(v) >= len)
		return TE_ERR_MALFORMED_JSON;
	snprintf(dst, len, "%s", v);
	return 0;
}

int te_rdma_hs_parse(const char *json, size_t len, struct te_rdma_hs *h)
{
	cJSON *o = cJSON_ParseWithLength(json, len), *a, *it;
	const cJSON *lid, *ack;
	int n = 0, rc = TE_ERR_MALFORMED_JSON;

	memset(h, 0, sizeof(*h));
	if (!cJSON_IsObject(o))
		goto out;
	a = cJSON_GetObjectItemCaseSensitive(o, "qp_num");
	if (copy_str(o, "local_nic_path", h->local_path, sizeof(h->local_path), true) ||
	    copy_str(o, "peer_nic_path", h->peer_path, sizeof(h->peer_path), true) ||
	    !cJSON_IsArray(a))
		goto out;
	/* a reply_msg too long for us is still a rejection: keep its start */
	it = cJSON_GetObjectItemCaseSensitive(o, "reply_msg");
	if (cJSON_IsString(it))
		snprintf(h->reply_msg, sizeof(h->reply_msg), "%s", it->valuestring);
	/* current form (0.3.11+): the sender's GID and LID inline; absent or not a string = the
	 * older form, the GID then comes from the sender's descriptor */
	it = cJSON_GetObjectItemCaseSensitive(o, "local_gid");
	if (cJSON_IsString(it) && it->valuestring[0] && strlen(it->valuestring) < sizeof(h->gid)) {
		snprintf(h->gid, sizeof(h->gid), "%s", it->valuestring);
		h->has_gid = true;
	}
	lid = cJSON_GetObjectItemCaseSensitive(o, "local_lid");
	if (cJSON_IsNumber(lid) && lid->valuedouble >= 0 && lid->valuedouble <= 0xffff)
		h->lid = (uint16_t)lid->valuedouble;
	ack = cJSON_GetObjectItemCaseSensitive(o, "ready_ack");
	h->ready_ack_supported = ack != NULL;
	h->ready_ack = cJSON_IsTrue(ack);
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 0xffffff)
			goto out;
		if (n < TE_RDMA_MAX_QP_PER_EP)
			h->qpn[n] = (uint32_t)it->valuedouble;
		n++;
	}
	h->nqpn = n;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

/* {"cpu:N":[[NICs on node N],[the others]], ...} for every NUMA node, as Mooncake's topology
 * discovery writes it (a NIC without a node, e.g. rxe, is "available" everywhere); plus an
 * entry listing every NIC as preferred for each extra location not covered (cuda:N buffers,
 * and cpu:0 when there is no node directory at all). */
char *te_rdma_matrix_json(const char *const *nic, const int *nic_numa, int nnic, const int *node,
                          int nnode, const char *const *extra, int nextra)
{
	cJSON *m = cJSON_CreateObject();
	char loc[32], *s;

	for (int k = 0; k < nnode; k++) {
		cJSON *e, *pref = cJSON_CreateArray(), *avail = cJSON_CreateArray();
		snprintf(loc, sizeof(loc), "cpu:%d", node[k]);
		if (cJSON_GetObjectItemCaseSensitive(m, loc)) {
			cJSON_Delete(pref);
			cJSON_Delete(avail);
			continue;
		}
		for (int i = 0; i < nnic; i++)
			cJSON_AddItemToArray(nic_numa[i] == node[k] ? pref : avail,
			                     cJSON_CreateString(nic[i]));
		e = cJSON_AddArrayToObject(m, loc);
		cJSON_AddItemToArray(e, pref);
		cJSON_AddItemToArray(e, avail);
	}
	for (int k = 0; k <= nextra; k++) {
		const char *l = k < nextra ? extra[k] : nnode ? "" : "cpu:0";
		cJSON *e;
		if (!l[0] || !strcmp(l, "*") || cJSON_GetObjectItemCaseSensitive(m, l) ||
		    (!strncmp(l, "cpu:", 4) && nnode))
			continue;
		e = cJSON_AddArrayToObject(m, l);
		cJSON_AddItemToArray(e, cJSON_CreateArray());
		cJSON_AddItemToArray(e, cJSON_CreateArray());
		for (int i = 0; i < nnic; i++)
			cJSON_AddItemToArray(cJSON_GetArrayItem(e, 0), cJSON_CreateString(nic[i]));
	}
	s = te_json_fast_write(m);
	cJSON_Delete(m);
	if (s)
		s[strcspn(s, "\n")] = 0; /* the descriptor embeds the object */
	return s;
}
