"""LATEST latency tables from Python: a thin ctypes layer over the C API of
liblatest_table (include/latest/latency_table.h; docs/table.md). No build
step of its own.

    import latest_table
    t = latest_table.LatencyTable("h200.json")
    t.latency_ms(1980, 990, "p95")

The library is found through LATEST_TABLE_LIBRARY (a path), then beside an
installed module (<prefix>/lib/python3/dist-packages -> <prefix>/lib), then
the system's library path.
"""
import ctypes
import ctypes.util
import os

__all__ = ["LatencyTable", "TableError", "STATISTICS", "RULES", "Route", "Advice"]

STATISTICS = ("min", "p05", "median", "mean", "p95", "p99", "max")
RULES = {"break-even": 0, "3x": 1}
_ROUTE_MAX_HOPS = 8
FLAGS = {1: "noisy", 2: "target_not_reached"}
_NAMES = {0: "ok", 1: "unreadable", 2: "invalid JSON", 3: "schema version", 4: "invalid table",
          5: "unknown pair", 6: "not measured", 7: "bad argument"}


def _load_library():
    candidates = []
    if os.environ.get("LATEST_TABLE_LIBRARY"):
        candidates.append(os.environ["LATEST_TABLE_LIBRARY"])
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "..", "liblatest_table.so.1"))
    found = ctypes.util.find_library("latest_table")
    if found:
        candidates.append(found)
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    raise OSError("liblatest_table not found: set LATEST_TABLE_LIBRARY to its path, or install LATEST")


_lib = _load_library()
_lib.latest_table_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.latest_table_free.argtypes = [ctypes.c_void_p]
_lib.latest_table_free.restype = None
for _fn in (_lib.latest_table_latency_ms, _lib.latest_table_transition_ms):
    _fn.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)]
_lib.latest_table_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint)]
_lib.latest_table_clocks.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t)]
_lib.latest_table_matches_device.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_int)]
_lib.latest_table_model.argtypes = [ctypes.c_void_p]
_lib.latest_table_model.restype = ctypes.c_char_p


class _CRoute(ctypes.Structure):
    _fields_ = [("hops", ctypes.c_size_t), ("clocks_mhz", ctypes.c_uint * _ROUTE_MAX_HOPS),
                ("wait_ms", ctypes.c_double * _ROUTE_MAX_HOPS), ("latency_ms", ctypes.c_double),
                ("low_ms", ctypes.c_double), ("high_ms", ctypes.c_double), ("direct_ms", ctypes.c_double)]


class _CCostModel(ctypes.Structure):
    _fields_ = [("gain", ctypes.c_double), ("penalty", ctypes.c_double)]


class _CAdvice(ctypes.Structure):
    _fields_ = [("decision", ctypes.c_int), ("rule", ctypes.c_int), ("route", _CRoute), ("back", _CRoute),
                ("latency_ms", ctypes.c_double), ("time_lost_ms", ctypes.c_double), ("min_interval_ms", ctypes.c_double)]


_lib.latest_table_route.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p, ctypes.c_double,
                                    ctypes.POINTER(_CRoute)]
_lib.latest_table_advise.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_double, ctypes.c_char_p,
                                     ctypes.c_int, ctypes.POINTER(_CCostModel), ctypes.c_double, ctypes.POINTER(_CAdvice)]
_lib.latest_status_text.argtypes = [ctypes.c_int]
_lib.latest_status_text.restype = ctypes.c_char_p


class TableError(Exception):
    """A call failed; `status` is the C API's code (latest_status)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Route:
    """How to reach a clock: the clocks to request in order, the wait after
    each (the hop's latency at the statistic), the predicted latency and
    band, and the direct change's latency."""

    def __init__(self, c):
        self.clocks_mhz = list(c.clocks_mhz[:c.hops])
        self.wait_ms = list(c.wait_ms[:c.hops])
        self.latency_ms = c.latency_ms
        self.low_ms = c.low_ms
        self.high_ms = c.high_ms
        self.direct_ms = c.direct_ms

    @property
    def detour(self):
        return len(self.clocks_mhz) > 1

    def __repr__(self):
        return "Route(clocks_mhz=%r, wait_ms=%s, latency_ms=%.3f, direct_ms=%.3f)" % (
            self.clocks_mhz, "[%s]" % ", ".join("%.3f" % w for w in self.wait_ms), self.latency_ms, self.direct_ms)


class Advice:
    """decision is "stay" or "switch"; rule "break-even" or "3x"."""

    def __init__(self, c):
        self.decision = "switch" if c.decision == 1 else "stay"
        self.rule = "3x" if c.rule == 1 else "break-even"
        self.route = Route(c.route)
        self.back = Route(c.back)
        self.latency_ms = c.latency_ms
        self.time_lost_ms = c.time_lost_ms
        self.min_interval_ms = c.min_interval_ms

    def __repr__(self):
        return "Advice(decision=%r, rule=%r, latency_ms=%.3f, time_lost_ms=%.3f, min_interval_ms=%.3f, route=%r)" % (
            self.decision, self.rule, self.latency_ms, self.time_lost_ms, self.min_interval_ms, self.route)


class LatencyTable:
    def __init__(self, path):
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = _lib.latest_table_load(os.fsencode(path), ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise TableError(rc, err.value.decode(errors="replace"))
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.latest_table_free(self._handle)
            self._handle = None

    def _check(self, rc, what):
        if rc != 0:
            raise TableError(rc, "%s: %s" % (_lib.latest_status_text(rc).decode(), what))

    def latency_ms(self, init_mhz, target_mhz, statistic="p95"):
        """Switching latency of init -> target in ms, without outliers."""
        out = ctypes.c_double()
        self._check(_lib.latest_table_latency_ms(self._handle, init_mhz, target_mhz, statistic.encode(),
                                                 ctypes.byref(out)), "%d -> %d MHz" % (init_mhz, target_mhz))
        return out.value

    def transition_ms(self, init_mhz, target_mhz, statistic="p95"):
        out = ctypes.c_double()
        self._check(_lib.latest_table_transition_ms(self._handle, init_mhz, target_mhz, statistic.encode(),
                                                    ctypes.byref(out)), "%d -> %d MHz" % (init_mhz, target_mhz))
        return out.value

    def flags(self, init_mhz, target_mhz):
        """Why a measured pair's numbers need a look: a set of "noisy", "target_not_reached" (empty: none)."""
        out = ctypes.c_uint()
        self._check(_lib.latest_table_flags(self._handle, init_mhz, target_mhz, ctypes.byref(out)),
                    "%d -> %d MHz" % (init_mhz, target_mhz))
        return {name for bit, name in FLAGS.items() if out.value & bit}

    def clocks(self):
        count = ctypes.c_size_t()
        self._check(_lib.latest_table_clocks(self._handle, None, 0, ctypes.byref(count)), "clocks")
        buf = (ctypes.c_uint * count.value)()
        self._check(_lib.latest_table_clocks(self._handle, buf, count.value, ctypes.byref(count)), "clocks")
        return list(buf)

    def matches(self, device, memory_mhz=0):
        out = ctypes.c_int()
        self._check(_lib.latest_table_matches_device(self._handle, device.encode(), memory_mhz, ctypes.byref(out)),
                    "matches")
        return bool(out.value)

    def route(self, from_mhz, to_mhz, statistic="p95", margin_ms=0.0):
        """The fastest route; a detour only when it beats the direct change by more than margin_ms."""
        out = _CRoute()
        self._check(_lib.latest_table_route(self._handle, from_mhz, to_mhz, statistic.encode(), margin_ms,
                                            ctypes.byref(out)), "%d -> %d MHz" % (from_mhz, to_mhz))
        return Route(out)

    def advise(self, from_mhz, to_mhz, phase_ms, statistic="p95", rule="break-even", gain=1.0, penalty=1.0,
               margin_ms=0.0):
        """Whether a phase of phase_ms pays the change from -> to (docs/table.md, "Advisor")."""
        if rule not in RULES:
            raise TableError(7, "unknown rule %r: one of %s" % (rule, ", ".join(RULES)))
        out = _CAdvice()
        model = _CCostModel(gain, penalty)
        self._check(_lib.latest_table_advise(self._handle, from_mhz, to_mhz, phase_ms, statistic.encode(), RULES[rule],
                                             ctypes.byref(model), margin_ms, ctypes.byref(out)),
                    "%d -> %d MHz" % (from_mhz, to_mhz))
        return Advice(out)

    @property
    def model(self):
        return _lib.latest_table_model(self._handle).decode()
