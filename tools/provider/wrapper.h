/* What the provider takes from C headers: rdma-core's public verbs API, the kernel's uverbs
 * command and ioctl ABI and srdma's own ABI. rdma-core's provider header (driver.h) is not
 * installed; its parts are declared in src/driver.rs. */
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/srdma-abi.h>
