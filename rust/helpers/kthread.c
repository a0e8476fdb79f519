// SPDX-License-Identifier: GPL-2.0

#include <linux/kthread.h>

void rust_helper_kthread_init_work(struct kthread_work *work, kthread_work_func_t fn)
{
	kthread_init_work(work, fn);
}
