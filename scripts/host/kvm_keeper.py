#!/usr/bin/python3
"""Hold one idle KVM VM (with an in-kernel irqchip and one vCPU) open.

Usage: kvm_keeper.py        (runs until killed; prints 'ready' when set up)

Why: creating and destroying a VM flips static keys in the host kernel
(preempt notifiers in __schedule, the LAPIC enable keys in kvm), which
live-patches kernel text with int3 breakpoints.  In the host VM the CPUs
are emulated by TCG, and a CPU executing the patched text at that moment
can take a stray int3 and oops.  With one VM alive from before the first
guest starts until after the last one ends, those keys never return to
zero, so starting and stopping the nested guests patches nothing.
"""
import fcntl
import os
import signal
import sys

KVM_CREATE_VM = 0xAE01
KVM_CREATE_IRQCHIP = 0xAE60
KVM_CREATE_VCPU = 0xAE41


def main():
    try:
        kvm = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
        vm = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        fcntl.ioctl(vm, KVM_CREATE_IRQCHIP, 0)
        vcpu = fcntl.ioctl(vm, KVM_CREATE_VCPU, 0)
    except OSError as e:
        sys.exit(f"kvm_keeper: cannot create the keeper VM: {e}")
    print(f"ready vm={vm} vcpu={vcpu}", flush=True)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
