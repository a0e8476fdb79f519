// SPDX-License-Identifier: GPL-2.0

#include <rdma/ib_verbs.h>

bool rust_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}
