"""Learned fusion weights: the step's direction, the bounds, the ratchet, per-user state that
survives a reopen, and nothing at all while ``Settings.fusion_learning`` is off."""

from __future__ import annotations

from graphmem import HashEmbedder, Memory, Settings
from graphmem.retrieve import learned

# feature order: vector, fulltext, graph, quality, recency
_POS_GRAPH = [0.2, 0.0, 1.0, 0.5, 0.5]
_NEG_VECTOR = [1.0, 0.0, 0.1, 0.5, 0.5]


def test_step_moves_towards_the_signal_that_ranked_the_used_learning() -> None:
    s = Settings(fusion_learning=True)
    moved = learned.step(learned.default_weights(), [_POS_GRAPH, _NEG_VECTOR], [1, -1], s)
    assert moved is not None
    assert moved["graph"] > 1.0 > moved["vector"]
    assert moved["quality"] == moved["recency"] == 1.0  # equal features: no move
    assert learned.step(learned.default_weights(), [_POS_GRAPH], [1], s) is None  # nothing to contrast


def test_weights_stay_within_the_bounds() -> None:
    s = Settings(fusion_learning=True, fusion_learn_rate=3.0, fusion_weight_min=0.5, fusion_weight_max=2.0)
    state = learned.new_state()
    for _ in range(30):
        state, _status = learned.learn(state, [_POS_GRAPH, _NEG_VECTOR], [1, -1], s)
    assert state["weights"]["graph"] == 2.0
    assert state["weights"]["vector"] == 0.5
    assert all(0.5 <= w <= 2.0 for w in state["weights"].values())
    assert len(state["examples"]) <= s.fusion_learn_examples


def test_labels_from_an_outcome() -> None:
    shown = ["a", "b", "c"]
    assert learned.labels(shown, "accepted", ["a"], [], []) == {"a": 1, "b": -1, "c": -1}
    assert learned.labels(shown, "rejected", ["a"], [], []) == {"a": -1, "b": -1, "c": -1}
    assert learned.labels(shown, "accepted", None, ["b"], ["c", "zzz"]) == {"b": 1, "c": -1}


def test_the_ratchet_rolls_back_a_step_that_hurts_the_recorded_outcomes() -> None:
    s = Settings(fusion_learning=True, fusion_learn_rate=2.0, fusion_weight_min=0.1, fusion_weight_max=10.0)
    # history: the used learning was the vector list's, the graph list's one was not used
    history = {"x": [[1.0, 0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.3, 0.5, 0.5]], "y": [1, -1]}
    state = {**learned.new_state(), "examples": [history] * 5}
    before = learned.replay_accuracy(state["weights"], state["examples"], s)
    # one contrary outcome would swing the weights to the graph list hard enough to undo the history
    contrary = [[0.0, 0.0, 1.0, 0.5, 0.5], [1.0, 0.0, 0.0, 0.5, 0.5]]
    assert learned.step(state["weights"], contrary, [1, -1], s)["graph"] > 5  # type: ignore[index]
    after, status = learned.learn(state, contrary, [1, -1], s)
    assert status == "rolled_back"
    assert after["weights"] == learned.default_weights()
    assert after["rollbacks"] == 1 and after["updates"] == 0
    assert learned.replay_accuracy(after["weights"], after["examples"], s) >= before * 5 / 6
    # a step agreeing with the history is kept
    kept, status = learned.learn(state, history["x"], history["y"], s)
    assert status == "kept" and kept["weights"]["vector"] > 1.0 and kept["updates"] == 1


def _seed(mem: Memory) -> tuple[str, str]:
    """One learning the graph list finds (linked to the tool), one the text lists find."""
    linked = mem.add_learning("Always rebase before pushing the branch", tool="git")
    textual = mem.add_learning("When you push code, run the unit tests first")
    return linked.id, textual.id


def test_outcomes_move_the_users_weights_and_they_survive_a_reopen(tmp_path) -> None:
    path = tmp_path / "db.kuzu"
    on = Settings(fusion_learning=True)
    mem = Memory(path, user="alice", embedder=HashEmbedder(), settings=on)
    linked, textual = _seed(mem)
    for _ in range(3):
        ctx = mem.context("push code", tool="git")
        shown = {item.id for item in ctx.learnings}
        assert {linked, textual} <= shown
        mem.record_outcome(ctx.id, success=True, used=[linked])
    weights = mem.fusion_weights()
    assert weights["graph"] > 1.0
    lo, hi = learned.bounds(on)
    assert all(lo <= w <= hi for w in weights.values())
    mem.close()

    again = Memory(path, user="alice", embedder=HashEmbedder(), settings=on)
    assert again.fusion_weights() == weights
    assert again.fusion_state()["updates"] >= 1
    again.close()


def test_another_user_keeps_the_default_weights(tmp_path) -> None:
    on = Settings(fusion_learning=True)
    alice = Memory(tmp_path / "db.kuzu", user="alice", embedder=HashEmbedder(), settings=on)
    linked, _ = _seed(alice)
    ctx = alice.context("push code", tool="git")
    alice.record_outcome(ctx.id, success=True, used=[linked])
    assert alice.fusion_weights() != learned.default_weights()
    assert alice.store.fusion_state("bob") is None
    alice.close()
    bob = Memory(tmp_path / "db.kuzu", user="bob", embedder=HashEmbedder(), settings=on)
    assert bob.fusion_weights() == learned.default_weights()
    bob.close()


def test_off_by_default_nothing_is_learned_or_stored(mem: Memory) -> None:
    assert mem.settings.fusion_learning is False
    linked, _ = _seed(mem)
    ctx = mem.context("push code", tool="git")
    mem.record_outcome(ctx.id, success=True, used=[linked])
    assert mem.store.fusion_state(mem.user) is None
    assert mem.fusion_weights() == learned.default_weights()


def test_learned_weights_change_the_ranking(tmp_path) -> None:
    on = Settings(fusion_learning=True, fusion_learn_rate=5.0, fusion_weight_min=0.1, fusion_weight_max=10.0)
    mem = Memory(tmp_path / "db.kuzu", user="alice", embedder=HashEmbedder(), settings=on)
    _, textual = _seed(mem)
    before = [i.id for i in mem.context("push code", tool="git").learnings]
    for _ in range(4):
        ctx = mem.context("push code", tool="git")
        mem.record_outcome(ctx.id, success=True, used=[textual])
    after = [i.id for i in mem.context("push code", tool="git").learnings]
    assert mem.fusion_weights()["graph"] < 1.0
    assert after.index(textual) <= before.index(textual)
    assert after[0] == textual
    mem.close()


def test_forget_user_deletes_the_learned_weights(tmp_path) -> None:
    on = Settings(fusion_learning=True)
    mem = Memory(tmp_path / "db.kuzu", user="alice", embedder=HashEmbedder(), settings=on)
    linked, _ = _seed(mem)
    ctx = mem.context("push code", tool="git")
    mem.record_outcome(ctx.id, success=True, used=[linked])
    assert mem.store.fusion_state("alice") is not None
    mem.store.forget_user("alice")
    assert mem.store.fusion_state("alice") is None
    mem.close()
