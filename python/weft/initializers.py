"""Initializers of model variables (weft/layers.h wf_init): each is a
(kind, value) pair the core's initializer ops draw from, seeded by the
model's seed and the variable's creation order."""


class Initializer:
    def __init__(self, kind, value=0.0, name=""):
        self.kind = kind
        self.value = float(value)
        self.name = name

    def __repr__(self):
        return "weft.initializers.%s(%g)" % (self.name, self.value)


def zeros(): return Initializer(0, 0.0, "zeros")
def ones(): return Initializer(1, 0.0, "ones")
def constant(value=0.0): return Initializer(2, value, "constant")
def random_uniform(limit=0.05): return Initializer(3, limit, "random_uniform")
def random_normal(stddev=0.05): return Initializer(4, stddev, "random_normal")


def truncated_normal(stddev=0.05):
    return Initializer(5, stddev, "truncated_normal")


def glorot_uniform(): return Initializer(6, 0.0, "glorot_uniform")
def glorot_normal(): return Initializer(7, 0.0, "glorot_normal")
def he_uniform(): return Initializer(8, 0.0, "he_uniform")
def he_normal(): return Initializer(9, 0.0, "he_normal")
def lecun_normal(): return Initializer(10, 0.0, "lecun_normal")


def get(x):
    if isinstance(x, Initializer):
        return x
    if isinstance(x, str):
        f = globals().get(x)
        if f is not None and callable(f) and not isinstance(f, type):
            return f()
    raise ValueError("weft: unknown initializer %r" % (x,))
