/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * srdma user ABI: the driver-specific data of the uverbs commands, the mmap'ed rings and the
 * doorbell records. The kernel driver and the rdma-core provider are both generated from this
 * header; nothing here is declared anywhere else.
 *
 * Everything is little-endian and naturally aligned; all structs are padded to 8 bytes.
 */
#ifndef SRDMA_ABI_USER_H
#define SRDMA_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* Bumped on any incompatible change; the provider accepts exactly this version. */
#define SRDMA_ABI_VERSION 1

/* The size of a work-queue basic block: WQEs are built of 64-byte blocks. */
#define SRDMA_WQE_BB_SIZE 64

/* The size of a completion-queue entry in the CQ ring. */
#define SRDMA_CQE_SIZE 64

/*
 * Doorbell records. Each ucontext has doorbell pages of 4 KiB, mmap'ed by the provider;
 * every QP, SRQ and CQ owns one record of SRDMA_DB_RECORD_SIZE bytes in one of them.
 * Userspace writes producer (QP, SRQ) or consumer (CQ) indices there; the kernel reads
 * them, never trusting them.
 */
#define SRDMA_DB_PAGE_SIZE 4096
#define SRDMA_DB_RECORD_SIZE 16

struct srdma_qp_db {
	__u32 sq_pi;	/* SQ producer index, in WQEs, free-running (userspace writes) */
	__u32 rq_pi;	/* RQ producer index, in WQEs, free-running (userspace writes) */
	__u32 sq_ci;	/* SQ consumer index (the kernel writes) */
	__u32 rq_ci;	/* RQ consumer index (the kernel writes) */
};

struct srdma_cq_db {
	__u32 ci;	/* consumer index, free-running (userspace writes) */
	__u32 arm;	/* SRDMA_CQ_ARM_*: userspace arms it, the kernel's event disarms it */
	__u32 reserved[2];
};

/*
 * Values of srdma_cq_db.arm. ibv_req_notify_cq stores one (no syscall), then a full barrier
 * separates it from polling again; the kernel writes a CQE, then a full barrier, then reads
 * arm, and raises the completion event (clearing arm) when the CQE matches.
 */
#define SRDMA_CQ_ARM_NONE	0
#define SRDMA_CQ_ARM_NEXT	1	/* the next completion of any kind */
#define SRDMA_CQ_ARM_SOLICITED	2	/* the next solicited or error completion */

/* Where a queue's doorbell record lives: mmap the page at db_mmap_key, add db_offset. */
struct srdma_db_loc {
	__aligned_u64 db_mmap_key;
	__u32 db_offset;
	__u32 reserved;
};

/*
 * Doorbell modes: how the kernel learns of new send work of a context.
 * KICK: after storing an SQ producer index the provider rings the QP's doorbell with a syscall
 *       (the kick), and the kernel processes the SQ in that syscall. The kick is the ioctl
 *       method SRDMA_IB_METHOD_QP_DOORBELL of UVERBS_OBJECT_QP, or, where the driver does not
 *       have it (EPROTONOSUPPORT), an empty post_send command.
 * POLL: a kernel poller watches the doorbell records of the context's QPs. Before it sleeps it
 *       sets SRDMA_CTX_NEED_WAKEUP in the context record, then looks at the doorbells once more;
 *       the provider stores the producer index, issues a full barrier, and kicks only if it
 *       then sees the flag. The kick processes the SQ and wakes the poller.
 */
#define SRDMA_DB_MODE_KICK	0
#define SRDMA_DB_MODE_POLL	1

/* The doorbell of a user QP as an ioctl: a method of UVERBS_OBJECT_QP, no response. */
enum srdma_ib_qp_methods {
	SRDMA_IB_METHOD_QP_DOORBELL = (1U << UVERBS_ID_NS_SHIFT),
};

enum srdma_ib_qp_doorbell_attrs {
	SRDMA_IB_ATTR_QP_DOORBELL_HANDLE = (1U << UVERBS_ID_NS_SHIFT),	/* the QP, for reading */
};

/* The context record (a doorbell record of the context, in poll mode). */
struct srdma_ctx_db {
	__u32 flags;		/* SRDMA_CTX_* (the kernel writes) */
	__u32 reserved[3];
};

#define SRDMA_CTX_NEED_WAKEUP	(1 << 0)

/* Response of alloc_ucontext (ibv_open_device). */
struct srdma_alloc_ucontext_resp {
	__u32 abi_version;	/* SRDMA_ABI_VERSION */
	__u32 max_inline_data;	/* bytes of payload an inline WQE carries */
	__u32 wqe_bb_size;	/* SRDMA_WQE_BB_SIZE */
	__u32 cqe_size;		/* SRDMA_CQE_SIZE */
	__u32 db_page_size;	/* SRDMA_DB_PAGE_SIZE */
	__u32 db_record_size;	/* SRDMA_DB_RECORD_SIZE */
	__u32 doorbell_mode;	/* SRDMA_DB_MODE_* of the context */
	/*
	 * The lkey of the device's null MR (ibv_alloc_null_mr): in an SGE of any QP, writes
	 * through it are discarded and reads return zeros; it is no rkey. 0 if there is none.
	 */
	__u32 null_mr_lkey;
	struct srdma_db_loc ctx_db;	/* the context record, in poll mode */
};

/*
 * Response of create_cq and resize_cq. The ring (cqe_cnt entries of cqe_size bytes) is mmap'ed
 * at ring_mmap_key. After a resize, the CQEs not yet consumed start at index 0 of the new ring
 * and the consumer index starts again at 0; the old ring may be unmapped.
 */
struct srdma_create_cq_resp {
	__aligned_u64 ring_mmap_key;
	__u32 ring_size;	/* bytes to mmap */
	__u32 cqe_cnt;		/* entries, a power of two */
	struct srdma_db_loc db;
	__u32 cq_id;
	__u32 reserved;
};

/*
 * Work-queue entries. An SQ WQE is a header of SRDMA_SQ_WQE_HDR_SIZE bytes (control, then the
 * remote or datagram segment) followed by a data area holding either the inline payload or up
 * to max_send_sge scatter/gather entries of SRDMA_SGE_SIZE bytes; its stride is sq_wqe_size, a
 * multiple of SRDMA_WQE_BB_SIZE. An RQ WQE is a header of SRDMA_RQ_WQE_HDR_SIZE bytes followed
 * by max_recv_sge entries; its stride is rq_wqe_size, a power of two.
 */
#define SRDMA_SQ_WQE_HDR_SIZE 64
#define SRDMA_RQ_WQE_HDR_SIZE 16
#define SRDMA_SGE_SIZE 16

/* Flags of an SQ WQE (struct srdma_wqe_ctrl.flags). */
#define SRDMA_WQE_SIGNALED	(1 << 0)	/* write a CQE when it completes */
#define SRDMA_WQE_SOLICITED	(1 << 1)	/* the receiver's CQ event is solicited */
#define SRDMA_WQE_FENCE		(1 << 2)	/* wait for earlier RDMA reads and atomics */
#define SRDMA_WQE_INLINE	(1 << 3)	/* the data area holds the payload itself */

/*
 * The opcode of a fast registration, IB_WR_REG_MR: kernel callers' QPs carry it in their
 * rings, and a user WQE with it completes in error. It has no ib_uverbs_wr_opcode number.
 */
#define SRDMA_KERNEL_WR_REG_MR 0x20

/* The control segment that starts every SQ WQE. */
struct srdma_wqe_ctrl {
	__aligned_u64 wr_id;
	__u8 opcode;		/* enum ib_uverbs_wr_opcode, or SRDMA_KERNEL_WR_REG_MR */
	__u8 flags;		/* SRDMA_WQE_* */
	__u16 num_sge;		/* SGEs in the data area; 0 with SRDMA_WQE_INLINE */
	__u32 inline_len;	/* payload bytes with SRDMA_WQE_INLINE */
	__u32 imm_data;		/* immediate data (network order), or the rkey to invalidate */
	__u32 reserved;
	__aligned_u64 reserved2;
};

/* The segment after the control segment of RDMA and atomic WQEs. */
struct srdma_wqe_remote {
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 reserved;
	__aligned_u64 compare_add;	/* compare (CMP_AND_SWP) or add (FETCH_AND_ADD) */
	__aligned_u64 swap;
};

/* The segment after the control segment of UD WQEs: the address vector. */
struct srdma_wqe_ud {
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u8 dgid[16];
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 sl;
	__u32 flow_label;
};

/*
 * The segment after the control segment of BIND_MW WQEs: ibv_bind_mw (type 1 windows) and
 * the BIND_MW work request (type 2). LOCAL_INV and SEND_WITH_INV carry the rkey to invalidate
 * in srdma_wqe_ctrl.imm_data.
 */
struct srdma_wqe_bind {
	__aligned_u64 addr;	/* start of the window in the MR's addresses */
	__aligned_u64 length;	/* bytes; 0 unbinds a type 1 window */
	__u32 mw_rkey;		/* names the window by its rkey's index bits, not by the key byte */
	__u32 new_rkey;		/* the window's rkey once bound: the same index, a new key byte */
	__u32 mr_lkey;		/* the MR the window lies in (unused when length is 0) */
	__u32 access;		/* enum ib_uverbs_access_flags of the window */
};

/* The header of every SQ WQE: SRDMA_SQ_WQE_HDR_SIZE bytes. */
struct srdma_sq_wqe_hdr {
	struct srdma_wqe_ctrl ctrl;
	union {
		struct srdma_wqe_remote remote;
		struct srdma_wqe_ud ud;
		struct srdma_wqe_bind bind;
	};
};

/* A scatter/gather entry: SRDMA_SGE_SIZE bytes. */
struct srdma_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* The header of every RQ and SRQ WQE: SRDMA_RQ_WQE_HDR_SIZE bytes. */
struct srdma_rq_wqe_hdr {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/* Flags of a CQE (struct srdma_cqe.wc_flags): the values of rdma-core's enum ibv_wc_flags. */
#define SRDMA_CQE_GRH		(1 << 0)	/* the receive buffer starts with a GRH */
#define SRDMA_CQE_WITH_IMM	(1 << 1)	/* imm_data holds immediate data */
#define SRDMA_CQE_WITH_INV	(1 << 3)	/* imm_data holds the invalidated rkey */

/* The owner word of a CQE: bit 0 is the phase of the ring pass that wrote it. */
#define SRDMA_CQE_OWNER_PHASE 1

/*
 * A completion-queue entry: SRDMA_CQE_SIZE bytes. The kernel writes the body, then the owner
 * word with release ordering. The CQE at free-running index i is valid once
 * (owner & SRDMA_CQE_OWNER_PHASE) == ((i / cqe_cnt) & 1) ^ 1: the first pass over the zeroed
 * ring writes phase 1, the second phase 0, and so on.
 */
struct srdma_cqe {
	__aligned_u64 wr_id;
	__u32 status;		/* enum ibv_wc_status values */
	__u32 opcode;		/* enum ibv_wc_opcode values */
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_data;		/* network order, or the invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;		/* SRDMA_CQE_* */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 network_hdr_type;	/* with IBV_WC_GRH: 2 for IPv4, 3 for IPv6 (RoCEv2) */
	__u8 reserved;
	/*
	 * With IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION: when the CQE was written, in nanoseconds
	 * of the kernel's CLOCK_MONOTONIC (the device clock runs at 1 GHz); 0 otherwise.
	 */
	__aligned_u64 timestamp;
	__u32 reserved2;
	__u32 owner;		/* SRDMA_CQE_OWNER_PHASE */
};

/* Response of create_qp. Each ring is mmap'ed at its key; rq fields are 0 with an SRQ. */
struct srdma_create_qp_resp {
	__aligned_u64 sq_mmap_key;
	__aligned_u64 rq_mmap_key;
	__u32 sq_size;		/* bytes to mmap */
	__u32 rq_size;
	__u32 sq_wqe_cnt;	/* SQ WQEs, a power of two */
	__u32 sq_wqe_size;	/* bytes per SQ WQE */
	__u32 rq_wqe_cnt;	/* RQ WQEs, a power of two */
	__u32 rq_wqe_size;	/* bytes per RQ WQE */
	__u32 max_inline_data;
	__u32 reserved;
	struct srdma_db_loc db;
};

/* Response of create_srq. */
struct srdma_create_srq_resp {
	__aligned_u64 rq_mmap_key;
	__u32 rq_size;
	__u32 rq_wqe_cnt;
	__u32 rq_wqe_size;
	__u32 srq_num;
	struct srdma_db_loc db;
};

#endif /* SRDMA_ABI_USER_H */
