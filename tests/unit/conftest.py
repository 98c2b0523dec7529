"""The fast tier (`make check`): unit tests that mirror rag/'s modules, built on hand-made inputs.

No test here loads the embedding model or the judge: the guard in tests/unit/no_model.py makes any that
tries fail. A test that needs the real model belongs in tests/, with the full suite (`make test`).
"""

from tests.unit.no_model import no_model  # noqa: F401  (autouse: every test here runs under the guard)
