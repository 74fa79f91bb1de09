/* Minimal qemu TCG plugin (plugin API v1, qemu 7.2; Debian ships qemu-user without its
 * example plugins): counts guest instructions executed, printed at exit as "insns: N" with
 * `-d plugin`. Declares the few API functions it uses instead of including qemu-plugin.h.
 * Used by bench/scripts/qemu-count.sh. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, void *), void *);
void qemu_plugin_outs(const char *);
static uint64_t insns;
static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, qemu_plugin_tb_n_insns(tb));
}
static void at_exit(qemu_plugin_id_t id, void *p) {
    (void)id; (void)p;
    char buf[64];
    snprintf(buf, sizeof buf, "insns: %" PRIu64 "\n", insns);
    qemu_plugin_outs(buf);
}
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info; (void)argc; (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
