/* SPDX-License-Identifier: Apache-2.0 */
/* test_rdma_wire: the RDMA transport's JSON that needs no device — the Connection handshake in
 * Mooncake's current form (local_gid, local_lid, payload, ready_ack) and the older 4-key form,
 * byte for byte, both parsed; and the priority matrix as Mooncake's discovery writes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "te/te_rdma.h"

static const char gid[] = "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02";

static struct te_rdma_hs sample(void)
{
	struct te_rdma_hs h;
	memset(&h, 0, sizeof(h));
	strcpy(h.local_path, "10.0.0.2:15001@rxe0");
	strcpy(h.peer_path, "10.0.0.3:15002@rxe1");
	h.qpn[0] = 17;
	h.qpn[1] = 18;
	h.nqpn = 2;
	strcpy(h.gid, gid);
	return h;
}

static void test_hs_forms(void **state)
{
	struct te_rdma_hs h = sample(), back;
	char *s;
	(void)state;
	/* current form: jsoncpp's sorted keys, as Mooncake 0.3.12+ writes it */
	s = te_rdma_hs_encode(&h, true);
	assert_string_equal(s, "{\"local_gid\":\"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02\","
	                       "\"local_lid\":0,\"local_nic_path\":\"10.0.0.2:15001@rxe0\","
	                       "\"payload\":\"\",\"peer_nic_path\":\"10.0.0.3:15002@rxe1\","
	                       "\"qp_num\":[17,18],\"ready_ack\":false,\"reply_msg\":\"\"}\n");
	assert_int_equal(te_rdma_hs_parse(s, strlen(s), &back), 0);
	assert_true(back.has_gid);
	assert_string_equal(back.gid, gid);
	assert_true(back.ready_ack_supported);
	assert_false(back.ready_ack);
	assert_int_equal(back.nqpn, 2);
	assert_int_equal(back.qpn[1], 18);
	free(s);
	/* the older form, selectable (PDKV_MOONCAKE_VERSION < 0.3.11) */
	s = te_rdma_hs_encode(&h, false);
	assert_string_equal(s, "{\"local_nic_path\":\"10.0.0.2:15001@rxe0\","
	                       "\"peer_nic_path\":\"10.0.0.3:15002@rxe1\",\"qp_num\":[17,18],"
	                       "\"reply_msg\":\"\"}\n");
	assert_int_equal(te_rdma_hs_parse(s, strlen(s), &back), 0);
	assert_false(back.has_gid); /* the GID then comes from the sender's descriptor */
	assert_false(back.ready_ack_supported);
	free(s);
	/* a ready ACK; a lid */
	h.ready_ack = true;
	h.lid = 7;
	s = te_rdma_hs_encode(&h, true);
	assert_non_null(strstr(s, "\"local_lid\":7,"));
	assert_non_null(strstr(s, "\"ready_ack\":true,"));
	assert_int_equal(te_rdma_hs_parse(s, strlen(s), &back), 0);
	assert_true(back.ready_ack);
	assert_int_equal(back.lid, 7);
	free(s);
}

static void test_hs_hostile(void **state)
{
	struct te_rdma_hs h;
	static const char *const bad[] = {
	    "null",
	    "[]",
	    "{\"peer_nic_path\":\"a@b\",\"qp_num\":[1]}",
	    "{\"local_nic_path\":\"a@b\",\"peer_nic_path\":\"c@d\",\"qp_num\":[-1]}",
	    "{\"local_nic_path\":\"a@b\",\"peer_nic_path\":\"c@d\",\"qp_num\":[16777216]}",
	    "{\"local_nic_path\":\"a@b\",\"peer_nic_path\":\"c@d\",\"qp_num\":\"1\"}",
	    "{\"local_nic_path\":5,\"peer_nic_path\":\"c@d\",\"qp_num\":[]}",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(te_rdma_hs_parse(bad[i], strlen(bad[i]), &h),
		                 TE_ERR_MALFORMED_JSON);
	/* a GID that is not a string, a lid out of range: the older form, no crash */
	const char *odd = "{\"local_gid\":5,\"local_lid\":70000,\"local_nic_path\":\"a@b\","
	                  "\"peer_nic_path\":\"c@d\",\"qp_num\":[1,2],\"ready_ack\":\"yes\"}";
	assert_int_equal(te_rdma_hs_parse(odd, strlen(odd), &h), 0);
	assert_false(h.has_gid);
	assert_int_equal(h.lid, 0);
	assert_false(h.ready_ack);
}

static void test_matrix(void **state)
{
	const char *nic[] = {"mlx5_0", "mlx5_1", "rxe0"};
	int numa[] = {0, 1, -1}, node[] = {0, 1}, one[] = {0};
	const char *extra[] = {"cpu:0", "cuda:0", "*"};
	char *s;
	(void)state;
	/* per node: its NICs preferred, the others available; a NIC without a node is never
	 * preferred (Mooncake's discovery); cuda:0 buffers get every NIC; "*" is not written */
	s = te_rdma_matrix_json(nic, numa, 3, node, 2, extra, 3);
	assert_string_equal(s, "{\"cpu:0\":[[\"mlx5_0\"],[\"mlx5_1\",\"rxe0\"]],"
	                       "\"cpu:1\":[[\"mlx5_1\"],[\"mlx5_0\",\"rxe0\"]],"
	                       "\"cuda:0\":[[\"mlx5_0\",\"mlx5_1\",\"rxe0\"],[]]}");
	free(s);
	/* the Soft-RoCE guest: one node, rxe without one */
	s = te_rdma_matrix_json(nic + 2, numa + 2, 1, one, 1, extra, 1);
	assert_string_equal(s, "{\"cpu:0\":[[],[\"rxe0\"]]}");
	free(s);
	/* no node directory at all: cpu:0 with every NIC */
	s = te_rdma_matrix_json(nic, numa, 2, NULL, 0, NULL, 0);
	assert_string_equal(s, "{\"cpu:0\":[[\"mlx5_0\",\"mlx5_1\"],[]]}");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hs_forms),
	    cmocka_unit_test(test_hs_hostile),
	    cmocka_unit_test(test_matrix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
