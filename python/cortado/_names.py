"""_names.py: a name a script gives that is not there (a blob, a layer, a net input): the KeyError
that says so, with the closest known name and the known ones, shared by pycaffe.py and io.py."""
import difflib

_MOST_LISTED = 20


class NameNotFound(KeyError):
    """A KeyError whose message reads as a sentence (KeyError's own str() shows it quoted)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ''


def listing(names):
    """'a, b, c' (at most 20 of them), or 'none'."""
    names = [str(name) for name in names]
    text = ', '.join(names[:_MOST_LISTED])
    if len(names) > _MOST_LISTED:
        text += ', ... (%d in all)' % len(names)
    return text or 'none'


def closest(names, known):
    """" (did you mean 'data'?)" for the known names closest to `names`, or ''."""
    known = [str(name) for name in known]
    matches = [match for name in names for match in difflib.get_close_matches(str(name), known, n=1, cutoff=0.5)]
    return ' (did you mean %s?)' % ', '.join(repr(match) for match in matches) if matches else ''


def require(what, kind, name, known, plural=None):
    """`name` when it is one of `known`; else NameNotFound: "<what>: no <kind> named 'x' (did you
    mean 'y'?); the net's <plural, by default kind + 's'>: ..."."""
    if name not in known:
        raise NameNotFound("%s: no %s named %r%s; the net's %s: %s"
                           % (what, kind, name, closest([name], known), plural or kind + 's', listing(known)))
    return name
