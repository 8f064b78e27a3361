"""The shared slot count of a search (measure/slots.py): no more processes at once than slots, a freed
slot goes to the next asker, and a started process never inherits the slots."""

import threading

from perftune.contract import protocol
from perftune.measure import slots
from perftune.measure.backends.base import device_env, run_logged


def _holder(name, taken, release, got):
    with slots.held() as slot:
        got[name] = slot
        taken[name].set()
        release[name].wait(60)


def test_two_slots_hold_two_launches_and_a_freed_slot_goes_to_the_waiting_one(tmp_path, monkeypatch):
    monkeypatch.setenv(protocol.SLOTS_ENV, str(slots.make(tmp_path / "slots", 2)))
    names = ("a", "b", "c")
    taken, release, got = ({n: threading.Event() for n in names}, {n: threading.Event() for n in names}, {})
    threads = {n: threading.Thread(target=_holder, args=(n, taken, release, got)) for n in names}
    for name in ("a", "b"):
        threads[name].start()
        assert taken[name].wait(60)
    threads["c"].start()
    assert not taken["c"].wait(0.5)          # both slots are held: the third launch waits, whatever the load
    assert sorted(got.values()) == ["slot_000", "slot_001"]
    release["a"].set()
    assert taken["c"].wait(60) and got["c"] == got["a"]   # a's freed slot, not a third one
    for name in ("b", "c"):
        release[name].set()
    for thread in threads.values():
        thread.join(60)


def test_without_slots_nothing_waits_and_a_started_process_holds_none(tmp_path, monkeypatch):
    monkeypatch.delenv(protocol.SLOTS_ENV, raising=False)
    with slots.held() as slot:
        assert slot is None
    monkeypatch.setenv(protocol.SLOTS_ENV, str(slots.make(tmp_path / "slots", 1)))
    assert protocol.SLOTS_ENV not in device_env(0)
    proc = run_logged(["sh", "-c", f'echo "${{{protocol.SLOTS_ENV}:-none}}"'], env=device_env(0), cwd=tmp_path,
                      log_path=None, timeout_s=60)
    assert proc.stdout.strip() == "none"


def test_every_held_slot_is_logged_and_summed_as_the_search_s_slot_use(tmp_path, monkeypatch):
    folder = slots.make(tmp_path / "slots", 2)
    monkeypatch.setenv(protocol.SLOTS_ENV, str(folder))
    for _ in range(3):
        with slots.held():
            pass
    use = slots.use(folder, 2, 10.0)
    assert use["launches"] == 3 and 0 <= use["busy_s"] < 10 and use["utilisation"] == round(use["busy_s"] / 20, 3)
