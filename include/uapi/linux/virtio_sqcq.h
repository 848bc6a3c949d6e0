/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * SQ/CQ doorbell polling for virtio-scsi over vhost-scsi.
 *
 * VIRTIO_F_SQCQ_POLL is a contract, not a new ring layout: when both sides
 * accept it, the device runs a submission (SQ) poller that reads the
 * driver's avail index from memory, the driver runs a completion (CQ)
 * poller that reads the used index, and each side treats the split ring's
 * existing suppression fields as NEED_WAKEUP flags:
 *
 *   - the device keeps notifications suppressed (VRING_USED_F_NO_NOTIFY, or
 *     an avail_event that lags) while its poller is awake, and before it
 *     sleeps re-enables them, issues a full barrier and re-reads the avail
 *     index; the driver stores the avail index, issues a full barrier and
 *     kicks only if notifications are enabled;
 *   - symmetrically for completions, with VRING_AVAIL_F_NO_INTERRUPT /
 *     used_event and the driver's CQ poller.
 *
 * Bit number: 50.  The virtio specification gives bits 0-23 and 50-127 to
 * the device type, 24-41 to the transport and ring, and keeps 42-49 for
 * future extensions.  This is a virtio-scsi (device-type) feature, so it
 * takes the first bit of the upper device range: outside Linux's transport
 * range [VIRTIO_TRANSPORT_F_START, VIRTIO_TRANSPORT_F_END) = [28, 42),
 * which vring_transport_features() strips, and clear of the bits
 * virtio-scsi defines (0-3).  It is not allocated by the specification;
 * before upstreaming it must be requested there.
 */
#ifndef _UAPI_LINUX_VIRTIO_SQCQ_H
#define _UAPI_LINUX_VIRTIO_SQCQ_H

#define VIRTIO_F_SQCQ_POLL	50

#endif /* _UAPI_LINUX_VIRTIO_SQCQ_H */
