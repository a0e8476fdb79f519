// SPDX-License-Identifier: GPL-2.0

#include <linux/bottom_half.h>

void rust_helper_local_bh_disable(void)
{
	local_bh_disable();
}

void rust_helper_local_bh_enable(void)
{
	local_bh_enable();
}
