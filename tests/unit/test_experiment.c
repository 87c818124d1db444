/* Unit tests for act/experiment: statistics over runs and the kernel events of a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "act/experiment.h"

static void test_stats(void **state)
{
        (void)state;
        struct exp_stats s;
        double odd[] = { 3.0, 1.0, 2.0 };
        assert_int_equal(exp_stats_of(odd, 3, &s), 0);
        assert_int_equal(s.n, 3);
        assert_true(s.median == 2.0 && s.min == 1.0 && s.max == 3.0);
        assert_true(odd[0] == 3.0); /* not sorted in place */
        double even[] = { 0.4, 0.1, 0.3, 0.2 };
        assert_int_equal(exp_stats_of(even, 4, &s), 0);
        assert_true(s.median > 0.2499 && s.median < 0.2501);
        assert_true(s.min == 0.1 && s.max == 0.4);
        double one[] = { 1024.0 };
        assert_int_equal(exp_stats_of(one, 1, &s), 0);
        assert_true(s.median == 1024.0 && s.min == 1024.0 && s.max == 1024.0);
        assert_int_equal(exp_stats_of(NULL, 0, &s), 0);
        assert_int_equal(s.n, 0);
}

static void push(struct xid_list *l, int xid, enum xid_kind kind, bool seq_known, uint64_t seq)
{
        struct xid_event e;
        memset(&e, 0, sizeof(e));
        e.xid = xid;
        e.caused_by = XID_NONE;
        e.sxid = XID_NONE;
        e.kind = kind;
        e.gpu_index = -1;
        e.seq_known = seq_known;
        e.seq = seq;
        assert_int_equal(xid_list_push(l, &e), 0);
}

static void test_kernel_delta(void **state)
{
        (void)state;
        struct xid_list before = { 0 }, after = { 0 };
        /* /dev/kmsg records: sequence numbers decide what is new (the ring may have dropped old ones) */
        push(&before, XID_NONE, XID_KIND_DRIVER_LOAD, true, 10);
        push(&before, 31, XID_KIND_XID, true, 11);
        push(&after, 31, XID_KIND_XID, true, 11);       /* the oldest one dropped from the ring */
        push(&after, 45, XID_KIND_XID, true, 12);       /* the kill */
        push(&after, 45, XID_KIND_XID, true, 13);
        push(&after, 13, XID_KIND_XID, true, 14);       /* a real error during the run */
        push(&after, XID_NONE, XID_KIND_GSP_ERROR, true, 15);
        push(&after, XID_NONE, XID_KIND_GPU_UUID, true, 16);
        struct exp_kernel k;
        exp_kernel_delta(&before, &after, &k);
        assert_int_equal(k.n_new, 5);
        assert_int_equal(k.xid45, 2);
        assert_int_equal(k.errors, 2);
        assert_int_equal(k.other, 1);
        assert_ptr_equal(k.first_new, &after.ev[1]);
        xid_list_free(&before);
        xid_list_free(&after);

        /* a saved log without sequence numbers: what is past the earlier count */
        memset(&before, 0, sizeof(before));
        memset(&after, 0, sizeof(after));
        push(&before, 79, XID_KIND_XID, false, 0);
        push(&after, 79, XID_KIND_XID, false, 0);
        push(&after, 45, XID_KIND_XID, false, 0);
        exp_kernel_delta(&before, &after, &k);
        assert_int_equal(k.n_new, 1);
        assert_int_equal(k.xid45, 1);
        assert_int_equal(k.errors, 0);
        /* nothing new; an empty log */
        xid_list_free(&after);
        memset(&after, 0, sizeof(after));
        push(&after, 79, XID_KIND_XID, false, 0);
        exp_kernel_delta(&before, &after, &k);
        assert_int_equal(k.n_new, 0);
        assert_null(k.first_new);
        struct xid_list empty = { 0 };
        exp_kernel_delta(&empty, &after, &k);
        assert_int_equal(k.n_new, 1);
        assert_int_equal(k.errors, 1);
        xid_list_free(&before);
        xid_list_free(&after);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stats),
                cmocka_unit_test(test_kernel_delta),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
