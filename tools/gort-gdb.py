# SPDX-License-Identifier: MIT
# gort-gdb.py - gdb commands for gort's goroutines, on a live process or a
# core file.  Mirrors Go's src/runtime/runtime-gdb.py.
#
#   (gdb) source tools/gort-gdb.py
#   (gdb) info goroutines
#   * 1  running                gdbtarget_main    thread 1 (LWP 4242)
#     7  waiting [chan receive] block_on_chan
#     9  runnable               never_started     not started
#   (gdb) goroutine 7 bt        the backtrace of goroutine 7
#   (gdb) goroutine all bt      every goroutine's
#   (gdb) goroutine 7 info locals   any command, in goroutine 7's newest frame
#
# `info goroutines` prints one line per goroutine that is not dead: "*" when
# it is on a thread (running, or in a system call), its id, its status with
# Go's names (running, runnable, waiting [reason], syscall, preempted), the
# function it was started with, and its thread.
#
# Where things come from.  Every goroutine is in the runtime's table
# gort__allgs (gort__allglen entries); fields are read by name through the
# program's debug information (struct g, struct m), so the script follows
# layout changes; status and wait-reason names come from the runtime's own
# tables gort__gstatus_names and gort__waitreason_names.  The program must
# be built with -g (RelWithDebInfo is).  What debug information cannot
# describe is fixed here: the frame gort__ctx_switch leaves on a parked
# goroutine's stack (src/arch/*.S) and the kernel's ucontext_t layout.
#
# How a goroutine's backtrace is found.
#   - On a thread (g->m set and that M's curg is the goroutine): that
#     thread's backtrace; the thread is the one whose LWP is the M's procid.
#   - Parked (waiting, runnable, preempted): its registers are in the frame
#     at g->sched_sp.  A Python unwinder (gdb.unwinder) claims the newest
#     frame of the selected thread (after any inlined ones) and gives that
#     saved context as its caller; gdb's own unwinder (DWARF CFI) then walks
#     the goroutine's stack.  The thread's own frames are left out of what
#     is printed.  This
#     works on core files, where registers cannot be changed (Go's script
#     sets $pc and $sp, which only a live process allows), needs no frame
#     pointers (CFI covers libc and code built without them), and keeps
#     inlined frames, arguments and locals (bt full, info locals).
#   - A goroutine taken off its thread by the preemption signal resumes
#     through gort__async_preempt, which holds the interrupted registers in
#     a ucontext_t copy (rbx / x19 point at it).  The same unwinder gives
#     that frame's caller those registers, so the backtrace goes on into
#     the interrupted code.  gdb looks a caller frame's code up at pc - 1,
#     right for a return address but not for an interrupted pc (a function
#     interrupted at its first instruction, or in a prologue, would be
#     misnamed or misunwound), and the unwinder API cannot mark the frame
#     as a signal frame; so the interrupted pc is given as pc + 1, and
#     `goroutine N bt` prints it back as pc (other commands show pc + 1).
#   - A goroutine that never ran has no stack yet: its start function is
#     printed instead.
#
# Snapshot caveat: a core or a stopped process may catch a goroutine in
# the middle of a switch (its status changed, its registers not yet saved,
# or the reverse); its backtrace may then end early or show the scheduler.

import re

import gdb
import gdb.unwinder

_U64 = None


def _u64():
    global _U64
    if _U64 is None:
        _U64 = gdb.lookup_type("unsigned long long")
    return _U64


def _read_u64(addr):
    """The 8 bytes at addr, as a gdb.Value (read now, not lazily)."""
    v = gdb.Value(addr).cast(_u64().pointer()).dereference()
    v.fetch_lazy()
    return v


class _Arch(object):
    """Register names and the saved-context layouts of one architecture."""

    def __init__(self, pc, sp, ctx_regs, ctx_pc, ctx_size, preempt_reg,
                 uc_offset, uc_regs):
        self.pc = pc                    # gdb's name for the pc
        self.sp = sp                    # and for the stack pointer
        self.ctx_regs = ctx_regs        # (register, offset from sched_sp)
        self.ctx_pc = ctx_pc            # offset of the resume address
        self.ctx_size = ctx_size        # sp after the switch returns
        self.preempt_reg = preempt_reg  # holds the copied signal frame
        self.uc_offset = uc_offset      # ucontext_t within that frame
        self.uc_regs = uc_regs          # (register, offset in ucontext_t)


# src/arch/x86_64.S: fpctl at +0 and +8, then r15 r14 r13 r12 rbx rbp, the
# resume address at +64; the switch returns with sp = sched_sp + 72.
# The preemption stub gets rbx = the ucontext_t copy; uc_mcontext.gregs is
# at +40, in the kernel's order (REG_R8 = 0 ... REG_RIP = 16).
_X86_64 = _Arch(
    pc="rip", sp="rsp",
    ctx_regs=[("r15", 16), ("r14", 24), ("r13", 32), ("r12", 40),
              ("rbx", 48), ("rbp", 56)],
    ctx_pc=64, ctx_size=72,
    preempt_reg="rbx", uc_offset=0,
    uc_regs=[(name, 40 + 8 * i) for i, name in enumerate(
        ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi",
         "rsi", "rbp", "rbx", "rdx", "rax", "rcx", "rsp", "rip"])])

# src/arch/aarch64.S: x29 x30 (the resume address) at +0 and +8, x19-x28
# from +16, d8-d15, FPCR; 176 bytes.  The preemption stub gets x19 = the
# copied kernel frame: siginfo_t (128 bytes), then the ucontext_t, whose
# uc_mcontext has regs[31] at +184, sp at +432 and pc at +440.
_AARCH64 = _Arch(
    pc="pc", sp="sp",
    ctx_regs=[("x29", 0), ("x30", 8)] +
             [("x%d" % (19 + i), 16 + 8 * i) for i in range(10)],
    ctx_pc=8, ctx_size=176,
    preempt_reg="x19", uc_offset=128,
    uc_regs=[("x%d" % i, 184 + 8 * i) for i in range(31)] +
            [("sp", 432), ("pc", 440)])


def _arch_of(gdbarch):
    name = gdbarch.name()
    if "x86-64" in name:
        return _X86_64
    if name.startswith("aarch64"):
        return _AARCH64
    raise gdb.GdbError("gort: unsupported architecture %s (gort runs on "
                       "x86-64 and aarch64)" % name)


class _FrameId(object):
    """A frame id for gdb.PendingFrame.create_unwind_info."""

    def __init__(self, sp, pc):
        self.sp = gdb.Value(sp).cast(_u64())
        self.pc = gdb.Value(pc).cast(_u64())


class _Switch(object):
    """A parked goroutine's registers, to be shown as the caller of the
    newest real frame of thread `ptid`, whose pc and sp are given."""

    def __init__(self, ptid, pc, sp, sched_sp, regs):
        self.ptid = ptid
        self.pc = pc
        self.sp = sp
        self.sched_sp = sched_sp
        self.regs = regs  # [(register name, gdb.Value)]


class GortUnwinder(gdb.unwinder.Unwinder):
    """Unwinds into parked goroutines and through the preemption stub."""

    def __init__(self):
        super(GortUnwinder, self).__init__("gort")
        self.switch = None   # a _Switch while a goroutine is shown
        self.stub = None     # (lo, hi): gort__async_preempt after its call
        self.stub_start = 0
        self.finding = False

    def __call__(self, pending_frame):
        if self.finding:
            return None  # the stub is being looked up: no frame is ours
        try:
            if self.switch is not None and \
                    gdb.selected_thread().ptid == self.switch.ptid:
                info = self._switched(pending_frame)
                if info is not None:
                    return info
            if self.stub is not None:
                return self._preempted(pending_frame)
        except Exception:  # pylint: disable=broad-except
            # An unreadable or unexpected frame is not ours: gdb's other
            # unwinders take it, and an error here would end the backtrace.
            return None
        return None

    def _switched(self, pending_frame):
        # The newest frame that is not an inlined one (gdb's inline
        # unwinder claims those first) has the thread's own registers; only
        # it does, as every older frame has a larger sp.
        arch = _arch_of(pending_frame.architecture())
        pc = int(pending_frame.read_register(arch.pc))
        sp = int(pending_frame.read_register(arch.sp))
        if pc != self.switch.pc or sp != self.switch.sp:
            return None
        # The id's stack address is the goroutine's saved sp: below every
        # frame of the goroutine, so gdb sees the stack grow the right way.
        info = pending_frame.create_unwind_info(
            _FrameId(self.switch.sched_sp, pc))
        for name, value in self.switch.regs:
            info.add_saved_register(name, value)
        return info

    def _preempted(self, pending_frame):
        arch = _arch_of(pending_frame.architecture())
        pc = int(pending_frame.read_register(arch.pc))
        lo, hi = self.stub
        if not lo <= pc < hi:
            return None
        uc = int(pending_frame.read_register(arch.preempt_reg)) + \
            arch.uc_offset
        sp = int(pending_frame.read_register(arch.sp))
        info = pending_frame.create_unwind_info(_FrameId(sp, self.stub_start))
        for name, off in arch.uc_regs:
            value = _read_u64(uc + off)
            if name == arch.pc:
                # gdb takes a caller's pc for a return address and looks
                # its code up at pc - 1; the interrupted pc is exact, so
                # it is given as pc + 1 (see the header).
                value = gdb.Value(int(value) + 1).cast(_u64())
            info.add_saved_register(name, value)
        return info

    def find_stub(self):
        """Locate the code of gort__async_preempt after its call (where a
        preempted goroutine's frame has its pc).  Runs outside unwinding:
        evaluating the symbol may build frames, which call this unwinder."""
        self.finding = True
        try:
            self.stub = None
            try:
                start = int(gdb.parse_and_eval(
                    "(unsigned long long)&gort__async_preempt"))
            except gdb.error:
                return
            insns = gdb.selected_inferior().architecture().disassemble(
                start, count=8)
            ops = [(insn["asm"].split() or [""])[0] for insn in insns]
            for i, insn in enumerate(insns):
                if ops[i] in ("call", "callq", "bl"):
                    # From the return address to the trap that ends it.
                    lo = insn["addr"] + insn["length"]
                    hi = lo + 1
                    for later, op in zip(insns[i + 1:], ops[i + 1:]):
                        hi = later["addr"] + later["length"]
                        if op in ("ud2", "brk"):
                            break
                    self.stub = (lo, hi)
                    self.stub_start = start
                    return
        except (gdb.error, gdb.MemoryError):
            self.stub = None
        finally:
            self.finding = False
            # Frames built meanwhile did not see the stub.
            gdb.invalidate_cached_frames()


_unwinder = GortUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)


def _forget_stub(_event=None):
    # A new program or library: look the stub up again on the next stop or
    # command.
    _unwinder.stub = None
    _unwinder.stub_start = 0


def _refind_stub(_event=None):
    # A live process stopped (and a PIE may have moved since the last
    # look): find the stub for plain backtraces through it too.
    _unwinder.find_stub()


gdb.events.new_objfile.connect(_forget_stub)
gdb.events.clear_objfiles.connect(_forget_stub)
gdb.events.stop.connect(_refind_stub)
if gdb.selected_thread() is not None:
    _refind_stub()  # sourced with a process or core already there


# ---------------------------------------------------------------------------
# Reading the runtime.
# ---------------------------------------------------------------------------

def _global(name):
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError(
            "gort: no symbol %s: is this a gort program built with debug "
            "information (-g)?" % name)
    return sym.value()


def _names(table):
    v = _global(table)
    lo, hi = v.type.range()
    return [v[i].string() for i in range(lo, hi + 1)]


def _symbol(addr):
    """The name of the function at code address addr, or its hex form."""
    if addr == 0:
        return "nil"
    try:
        block = gdb.block_for_pc(addr)
        while block is not None and block.function is None:
            block = block.superblock
        if block is not None:
            return block.function.print_name
    except RuntimeError:
        pass
    out = gdb.execute("info symbol 0x%x" % addr, to_string=True)
    m = re.match(r"(\S+)( \+ \d+)? in section", out)
    return m.group(1) if m else "0x%x" % addr


class Goroutine(object):
    """One G, as read from the program."""

    def __init__(self, gp, gstatus, reasons):
        self.gp = gp
        self.goid = int(gp["goid"])
        s = int(gp["atomicstatus"])
        self.status = gstatus[s] if 0 <= s < len(gstatus) and gstatus[s] \
            else "status %d" % s
        self.reason = ""
        if self.status == "waiting":
            r = int(gp["waitreason"])
            self.reason = reasons[r] if 0 <= r < len(reasons) else \
                "reason %d" % r
        self.fn = int(gp["fn"].cast(_u64()))
        self.sched_sp = int(gp["sched_sp"].cast(_u64()))
        # Preempted deep in its stack: parked on its own preemption stack
        # (src/preempt.c), with the interrupted registers at preemptctx.
        self.preemptctx = 0
        pstk = int(gp["preemptstk"].cast(_u64()))
        if pstk and pstk <= self.sched_sp < pstk + _PREEMPT_STK_MAX and \
                self.status != "syscall":
            self.preemptctx = int(gp["preemptctx"].cast(_u64()))
        self.tid = None  # the LWP of the thread it is on
        m = gp["m"]
        if m and m["curg"] == gp:
            self.tid = int(m["procid"])

    @property
    def live(self):
        return self.status not in ("dead", "idle")

    def state(self):
        """"waiting [reason]", or the status."""
        return "%s [%s]" % (self.status, self.reason) if self.reason \
            else self.status

    def header(self):
        """Go's traceback header: "goroutine 7 [chan receive]:"."""
        return "goroutine %d [%s]:" % (self.goid, self.reason or self.status)


def goroutines():
    """Every goroutine that is not dead, in gort__allgs order."""
    gstatus = _names("gort__gstatus_names")
    reasons = _names("gort__waitreason_names")
    n = int(_global("gort__allglen"))
    allgs = _global("gort__allgs")
    if n == 0 or int(allgs.cast(_u64())) == 0:
        return []
    out = []
    for i in range(n):
        gp = allgs[i]
        if int(gp.cast(_u64())) == 0:
            continue
        g = Goroutine(gp, gstatus, reasons)
        if g.live:
            out.append(g)
    return out


def _thread(tid):
    for t in gdb.selected_inferior().threads():
        if t.ptid[1] == tid or (t.ptid[1] == 0 and t.ptid[0] == tid):
            return t
    return None


def _need_target():
    if gdb.selected_thread() is None:
        raise gdb.GdbError("gort: no process or core file")


# ---------------------------------------------------------------------------
# Commands.
# ---------------------------------------------------------------------------

class InfoGoroutines(gdb.Command):
    """List the goroutines: info goroutines

"*" marks a goroutine on a thread; then its id, status (waiting [reason]
for a parked one), the function it was started with, and its thread."""

    def __init__(self):
        super(InfoGoroutines, self).__init__("info goroutines",
                                             gdb.COMMAND_STACK,
                                             gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        if arg.strip():
            raise gdb.GdbError("usage: info goroutines")
        _need_target()
        gs = goroutines()
        if not gs:
            print("No goroutines (the gort runtime is not running).")
            return
        threads = {}
        for t in gdb.selected_inferior().threads():
            threads[t.ptid[1]] = t.num
        idw = max(len(str(g.goid)) for g in gs)
        stw = max(len(g.state()) for g in gs)
        rows = []
        for g in gs:
            where = ""
            if g.tid is not None:
                num = threads.get(g.tid)
                where = "thread %s (LWP %d)" % (num if num else "?", g.tid)
            elif g.sched_sp == 0:
                where = "not started"
            rows.append((g, _symbol(g.fn), where))
        fnw = max(len(fn) for _, fn, _ in rows)
        for g, fn, where in rows:
            line = "%s %*d  %-*s  %-*s  %s" % (
                "*" if g.tid is not None else " ", idw, g.goid, stw,
                g.state(), fnw, fn, where)
            gdb.write(line.rstrip() + "\n")


def _is_bt(cmd):
    words = cmd.split()
    return bool(words) and words[0] in ("bt", "backtrace", "where")


def _bt_skipping(cmd, skip, first_interrupted=False):
    """Run a backtrace command and drop its first `skip` frames (the
    selected thread's own, which the unwinder made the goroutine's callee),
    numbering the rest from 0.  first_interrupted: the first frame kept is
    one a preemption interrupted (given as pc + 1)."""
    words = cmd.split()
    # A frame count counts the dropped frames too.
    for i, w in enumerate(words[1:], 1):
        if w.isdigit():
            words[i] = str(int(w) + skip)
            break
    out = gdb.execute(" ".join(words), to_string=True)
    lines = []
    skipping = False
    interrupted = False  # the next frame is the one preemption interrupted
    for line in out.splitlines(True):
        m = re.match(r"#(\d+)(\s+)", line)
        if m:
            level = int(m.group(1))
            skipping = level < skip
            after_stub = interrupted or (first_interrupted and level == skip)
            interrupted = " gort__async_preempt " in line
            if skipping:
                continue
            width = len(m.group(1)) + len(m.group(2))
            new = str(level - skip)
            rest = line[m.end():]
            if after_stub:
                rest = _minus_one(rest)
            line = "#" + new + " " * max(1, width - len(new)) + rest
        elif skipping:
            continue
        lines.append(line)
    return "".join(lines)


def _minus_one(rest):
    """The frame line `rest` ("0x... in f (...) at ...") with its address
    made one less: the exact pc of a frame the preemption unwinder gave as
    pc + 1."""
    m = re.match(r"0x([0-9a-f]+)", rest)
    if not m:
        return rest
    digits = m.group(1)
    return "0x%0*x" % (len(digits), int(digits, 16) - 1) + rest[m.end():]


# A goroutine's preemption stack is at most this large (GORT_PREEMPT_STK,
# larger under AddressSanitizer).
_PREEMPT_STK_MAX = 128 * 1024


def _interrupted_regs(arch, uc):
    """The registers a preemption interrupted, from its copied ucontext_t
    at uc, and the stack pointer they hold.  The pc is given as pc + 1, as
    for the stub (see the header)."""
    regs = []
    sp = 0
    for name, off in arch.uc_regs:
        value = _read_u64(uc + off)
        if name == arch.pc:
            value = gdb.Value(int(value) + 1).cast(_u64())
        if name == arch.sp:
            sp = int(value)
        regs.append((name, value))
    return regs, sp


def _saved_regs(arch, sched_sp):
    regs = [(name, _read_u64(sched_sp + off)) for name, off in arch.ctx_regs]
    regs.append((arch.pc, _read_u64(sched_sp + arch.ctx_pc)))
    regs.append((arch.sp, gdb.Value(sched_sp + arch.ctx_size).cast(_u64())))
    return regs


# A parked goroutine whose resume address reads as 0 lost its stack from
# the core file: gdb's gcore stops copying a mapping at the first page it
# cannot read, and gort's stack arenas hold such pages (guard regions of
# MADV_GUARD_INSTALL, Linux 6.13+).  Kernel-written cores skip them.
_NO_STACK = (
    "goroutine %d: its stack is not in this core file (gdb's gcore cannot "
    "copy stack arenas with Linux guard regions: take cores of gort "
    "programs from the kernel, or run with GORTDEBUG=stackguard=mprotect)\n")


def run_in_goroutine(g, cmd):
    """Run gdb command cmd in goroutine g's context; return its output."""
    if g.tid is not None:
        thread = _thread(g.tid)
        if thread is None:
            return "goroutine %d is on LWP %d, which is not among the " \
                   "threads gdb sees\n" % (g.goid, g.tid)
        orig_thread = gdb.selected_thread()
        orig_frame = gdb.selected_frame()
        try:
            thread.switch()
            gdb.newest_frame().select()
            return gdb.execute(cmd, to_string=True)
        finally:
            orig_thread.switch()
            try:
                orig_frame.select()
            except gdb.error:
                pass
    if g.sched_sp == 0:
        return "goroutine %d has not started: it will run %s(%s)\n" % (
            g.goid, _symbol(g.fn), g.gp["arg"])
    thread = gdb.selected_thread()
    orig_frame = gdb.selected_frame()
    arch = _arch_of(orig_frame.architecture())
    frame_sp = g.sched_sp
    try:
        if g.preemptctx:
            # Its own preemption stack is elsewhere in memory: gdb would
            # stop at the jump back to the goroutine's stack, so start at
            # the interrupted code (gort's frames there are its own).
            regs, frame_sp = _interrupted_regs(arch, g.preemptctx)
        else:
            regs = _saved_regs(arch, g.sched_sp)
    except gdb.MemoryError:
        return "goroutine %d: cannot read its saved context at 0x%x\n" % (
            g.goid, g.sched_sp)
    if int(dict(regs)[arch.pc]) == 0:
        return _NO_STACK % g.goid
    newest = gdb.newest_frame()
    _unwinder.switch = _Switch(thread.ptid, int(newest.pc()),
                               int(newest.read_register(arch.sp)),
                               frame_sp, regs)
    gdb.invalidate_cached_frames()
    try:
        # The thread's frames: inlined ones, then the one the unwinder
        # claims, whose caller is the goroutine's newest frame.
        own = gdb.newest_frame()
        while own is not None and own.type() == gdb.INLINE_FRAME:
            own = own.older()
        caller = own.older() if own is not None else None
        if caller is None:
            return "goroutine %d: its saved context at 0x%x cannot be " \
                   "unwound\n" % (g.goid, g.sched_sp)
        if _is_bt(cmd):
            return _bt_skipping(cmd, own.level() + 1, g.preemptctx != 0)
        caller.select()
        return gdb.execute(cmd, to_string=True)
    finally:
        _unwinder.switch = None
        gdb.invalidate_cached_frames()
        try:
            orig_frame.select()
        except gdb.error:
            pass


class GoroutineCmd(gdb.Command):
    """Run a command in a goroutine's context: goroutine <id>|all [command]

The command defaults to bt.  "goroutine 7 bt" prints goroutine 7's
backtrace (bt full, bt N and the other bt forms work too); "goroutine all
bt" prints every goroutine's.  Other commands run with the goroutine's
newest frame selected (goroutine 7 info locals); frame numbers given to
them are gdb's, which count the selected thread's own frames first."""

    def __init__(self):
        super(GoroutineCmd, self).__init__("goroutine", gdb.COMMAND_STACK,
                                           gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        words = arg.split(None, 1)
        if not words:
            raise gdb.GdbError("usage: goroutine <id>|all [command] "
                               "(e.g. goroutine 7 bt)")
        which = words[0]
        cmd = words[1] if len(words) > 1 else "bt"
        if which != "all" and not re.match(r"^\d+$", which):
            raise gdb.GdbError("goroutine: '%s' is not a goroutine id "
                               "(a number, or all)" % which)
        _need_target()
        _unwinder.find_stub()
        gs = goroutines()
        if which == "all":
            for g in gs:
                gdb.write(g.header() + "\n")
                try:
                    gdb.write(run_in_goroutine(g, cmd))
                except gdb.error as e:  # report it, go on with the others
                    gdb.write("%s\n" % e)
                gdb.write("\n")
            return
        goid = int(which)
        for g in gs:
            if g.goid == goid:
                gdb.write(run_in_goroutine(g, cmd))
                return
        raise gdb.GdbError("goroutine: no goroutine %d (info goroutines "
                           "lists them)" % goid)


InfoGoroutines()
GoroutineCmd()
