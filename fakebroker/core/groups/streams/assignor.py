"""Kafka 4.4's ``sticky`` task assignor for streams groups (KIP-1071), as a pure function.

What Kafka's group coordinator computes in ``StickyTaskAssignor`` (with ``ProcessState``), for
the same input, down to the tie-breaks (our own code, written from the 4.4 branch head
``87943b2f``; STREAMS-GROUPS.md §5).

Interface::

    assign(members, subtopologies, configs=AssignmentConfigs(), *, member_order="kafka")
        -> dict[member id, MemberAssignment]

* ``members``: member id -> :class:`MemberSpec` — process id, rack id, instance id, client tags,
  the member's *current* tasks (what it owns now, ``StreamsGroupMember.assignedTasks`` — not its
  target) as ``{subtopology id: partitions}`` per role, and the task offset sums it reported
  (``TaskOffsets`` of its last heartbeat; ``task_end_offsets`` is carried but unused, as in Kafka).
* ``subtopologies``: subtopology id -> :class:`Subtopology` (number of tasks, and whether it is
  stateful, i.e. has changelog topics: only those get standbys).
* ``configs``: :class:`AssignmentConfigs` (``num.standby.replicas``; ``rack.aware.assignment.tags``
  is carried but, as in 4.4, unused by ``sticky``).
* Result: every member of ``members`` -> :class:`MemberAssignment` with ``active``, ``standby``,
  ``warmup`` as ``{subtopology id: sorted partition tuple}`` (subtopologies without tasks left
  out). ``warmup`` is always empty: 4.4 assigns no warm-ups (``AssignmentRefiner`` is a no-op).

The algorithm (STREAMS-GROUPS.md §5.1, §5.2):

1. Active tasks, quota ``ceil(#active / #members)``, re-computed whenever a member reaches it
   (that member and its tasks leave the division). Tasks in (partition, subtopology) order:
   (a) back to the member that owns it active, if under quota; (b) else to one previous
   "standby" of it — members owning it as standby (more caught-up offset sum first) before
   members that only reported an offset sum for it (larger first); the first candidate wins
   unless a later one has both a lower process load and a lower member load — if under quota.
   (c) the rest in (subtopology, partition) order, each to the least-loaded *process*
   (tasks / members), inside it to its member with the fewest tasks.
2. Standbys, only for stateful subtopologies, ``num.standby.replicas`` copies each, quota
   ``ceil((#active + #standby) / #members)`` maintained like the active one. Tasks in reversed
   (partition, subtopology) order: each copy goes to the previous active owner, else the chosen
   previous standby (as in 1b, skipping processes that already hold the task), if under the
   quota and its process does not hold the task; once that fails, the remaining copies of the
   task go, in reversed (subtopology, partition) order, to the least-loaded process that does
   not hold the task (any role). A process never holds a task twice; with too few processes a
   task gets fewer standbys (Kafka logs a warning).

Rack ids, client tags, instance ids, the rack-aware tags and task end offsets do not change the
result in 4.4 (they are accepted so that the coordinator can pass what Kafka's GroupSpec holds).

Determinism and Java's orders. The result is a function of the input alone. Where Kafka's
result depends on an iteration order, we reproduce Java's:

* ``java.util.PriorityQueue`` (a binary heap whose comparator looks at the load only) decides
  between equally loaded processes/members; :class:`_JavaHeap` performs the same sift-up and
  sift-down steps, so ties fall the same way.
* The order the heaps are filled in is ``HashMap`` iteration order: of process ids
  (``processIdToState``, sized by the member count) and, per process, of its member ids
  (``memberToTaskCounts``, default size). :func:`java_hash_map_order` reproduces it: bucket
  ``(h ^ h >>> 16) & (capacity - 1)`` of ``String.hashCode``, then insertion order inside a bucket,
  with Java's growth rules (load factor 0.75, and the doubling instead of treeifying a bucket of 9
  while the table is under 64). Not reproduced: the order inside a *treeified* bucket (9+ ids
  colliding in one bucket of a table of 64+), which takes deliberately colliding ids; we keep
  insertion order there.
* The members themselves: Kafka's ``TargetAssignmentBuilder`` puts them in a ``HashMap``, so with
  ``member_order="kafka"`` (default) we iterate them in ``java_hash_map_order`` of the member ids,
  the caller's order deciding inside a bucket (Kafka's is the order of its ``TimelineHashMap`` of
  members, which we do not model). ``member_order="given"`` iterates in the caller's order, which
  is what Kafka's own unit tests do (they build ``GroupSpecImpl`` from a ``LinkedHashMap``). The
  member order decides: which member's processes/members come first inside a hash bucket, who
  wins when two members claim the same active task (the later one), and the order of equally
  ranked standby candidates (stable sort).
* Subtopology ids compare as Java ``String.compareTo`` (UTF-16 code units).
* Per-member task sets are Java ``Set.copyOf`` (randomised order), but no result depends on it.

No members but some tasks: Kafka's assignor throws (``No process available to assign active
task …``); so does this one (:class:`TaskAssignorError`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import field
from typing import Generic, Literal, TypeVar

from ....lazy_dataclasses import dataclass

__all__ = [
    "NAME",
    "AssignmentConfigs",
    "MemberAssignment",
    "MemberSpec",
    "Subtopology",
    "TaskAssignorError",
    "assign",
    "java_hash_map_order",
    "java_string_hash",
    "tasks_by_subtopology",
]

NAME = "sticky"

TasksBySubtopology = Mapping[str, Collection[int]]
OffsetsBySubtopology = Mapping[str, Mapping[int, int]]


class TaskAssignorError(Exception):
    """Kafka's ``TaskAssignorException``: the assignment cannot be computed."""


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka's ``MemberAssignmentMetadata`` and
    ``MemberAssignmentState``). The task maps are the member's *current* tasks."""

    process_id: str
    rack_id: str | None = None
    instance_id: str | None = None
    client_tags: Mapping[str, str] = field(default_factory=dict)
    active_tasks: TasksBySubtopology = field(default_factory=dict)
    standby_tasks: TasksBySubtopology = field(default_factory=dict)
    warmup_tasks: TasksBySubtopology = field(default_factory=dict)
    task_offsets: OffsetsBySubtopology = field(default_factory=dict)  # subtopology -> partition -> offset sum
    task_end_offsets: OffsetsBySubtopology = field(default_factory=dict)


@dataclass(frozen=True)
class Subtopology:
    """What the assignor reads of a subtopology (Kafka's ``TopologyDescriber``)."""

    num_tasks: int  # maxNumInputPartitions: tasks are partitions 0..num_tasks-1
    stateful: bool = False  # has state changelog topics: gets standbys


@dataclass(frozen=True)
class AssignmentConfigs:
    """The group's assignment configs (``num.standby.replicas``, ``rack.aware.assignment.tags``:
    from ``group.streams.*`` or the group's ``streams.*`` override)."""

    num_standby_replicas: int = 0
    rack_aware_assignment_tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemberAssignment:
    """A member's target tasks per role: subtopology id -> sorted partitions."""

    active: dict[str, tuple[int, ...]] = field(default_factory=dict)
    standby: dict[str, tuple[int, ...]] = field(default_factory=dict)
    warmup: dict[str, tuple[int, ...]] = field(default_factory=dict)


def tasks_by_subtopology(tasks: Iterable[tuple[str, int]]) -> dict[str, frozenset[int]]:
    """(subtopology id, partition) pairs -> ``{subtopology id: partitions}``."""
    out: dict[str, set[int]] = {}
    for subtopology, partition in tasks:
        out.setdefault(subtopology, set()).add(partition)
    return {s: frozenset(ps) for s, ps in out.items()}


# ---------------------------------------------------------------------------------------------
# Java's orders


def java_string_hash(s: str) -> int:
    """``String.hashCode`` as an unsigned 32-bit int (over UTF-16 code units)."""
    h = 0
    if s.isascii():
        for ch in s.encode("ascii"):
            h = (31 * h + ch) & 0xFFFFFFFF
        return h
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def _table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return cap


def java_hash_map_order(keys: Iterable[str], initial_capacity: int | None = None) -> list[str]:
    """The iteration order of a ``java.util.HashMap<String, ?>`` into which ``keys`` were put in
    this order (duplicates ignored), created with ``new HashMap<>(initial_capacity)`` or, for
    ``None``, ``new HashMap<>()``."""
    ordered = list(dict.fromkeys(keys))
    if not ordered:
        return []
    # the table: allocated at the first put with the threshold as capacity (16 by default);
    # grown when the size passes 3/4 of it, or when a bucket gets its 9th entry while < 64
    cap = 16 if initial_capacity is None else _table_size_for(initial_capacity)
    spread = [(h ^ (h >> 16)) for h in map(java_string_hash, ordered)]
    counts: dict[int, int] = {}
    for i, h in enumerate(spread):
        bucket = h & (cap - 1)
        counts[bucket] = counts.get(bucket, 0) + 1
        if counts[bucket] >= 9 and cap < 64:
            cap <<= 1
            counts = {}
            for g in spread[: i + 1]:
                counts[g & (cap - 1)] = counts.get(g & (cap - 1), 0) + 1
        if i + 1 > (cap * 3) // 4:
            cap <<= 1
            counts = {}
            for g in spread[: i + 1]:
                counts[g & (cap - 1)] = counts.get(g & (cap - 1), 0) + 1
    mask = cap - 1
    return [ordered[i] for i in sorted(range(len(ordered)), key=lambda i: (spread[i] & mask, i))]


T = TypeVar("T")


class _JavaHeap(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator on ``key`` alone: the same sifts, so that
    equal keys come out in the order Java's heap gives them."""

    __slots__ = ("items", "key")

    def __init__(self, key: Callable[[T], float]) -> None:
        self.items: list[T] = []
        self.key = key

    def __len__(self) -> int:
        return len(self.items)

    def offer(self, x: T) -> None:
        items, key = self.items, self.key
        items.append(x)
        k = len(items) - 1
        kx = key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = items[parent]
            if kx >= key(e):
                break
            items[k] = e
            k = parent
        items[k] = x

    def poll(self) -> T | None:
        items, key = self.items, self.key
        if not items:
            return None
        result = items[0]
        x = items.pop()
        n = len(items)
        if n:
            kx = key(x)
            k = 0
            half = n >> 1
            while k < half:
                child = 2 * k + 1
                c = items[child]
                kc = key(c)
                right = child + 1
                if right < n:
                    kr = key(items[right])
                    if kc > kr:
                        child = right
                        c = items[right]
                        kc = kr
                if kx <= kc:
                    break
                items[k] = c
                k = child
            items[k] = x
        return result


# ---------------------------------------------------------------------------------------------
# The assignor's state

Task = tuple[str, int]


class _Process:
    """Kafka's ``ProcessState``: a process's members, their task counts and its load."""

    __slots__ = (
        "active",
        "capacity",
        "counts",
        "heap",
        "load",
        "member_order",
        "process_id",
        "standby",
        "task_count",
        "tasks",
    )

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.task_count = 0
        self.load = 0.0
        self.counts: dict[str, int] = {}  # member -> tasks (insertion order = addMember order)
        self.member_order: list[str] = []  # HashMap order of ``counts``
        self.active: dict[str, list[Task]] = {}
        self.standby: dict[str, list[Task]] = {}
        self.tasks: set[Task] = set()
        self.heap: _JavaHeap[list[object]] | None = None  # [member, count] entries, by count

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.capacity += 1
        self.load = self.task_count / self.capacity

    def _add(self, member_id: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, []).append(task)
        n = self.counts[member_id] + 1
        self.counts[member_id] = n
        self.load = self.task_count / self.capacity
        return n

    def add_task(self, member_id: str, task: Task, active: bool) -> int:
        n = self._add(member_id, task, active)
        self.heap = None  # Kafka drops its member heap here and rebuilds it when next needed
        return n

    def add_task_to_least_loaded_member(self, task: Task, active: bool) -> int:
        if not self.counts:
            return -1
        if len(self.counts) == 1:
            return self._add(self.member_order[0], task, active)
        if self.heap is None:
            heap: _JavaHeap[list[object]] = _JavaHeap(_entry_count)
            for member_id in self.member_order:
                heap.offer([member_id, self.counts[member_id]])
            self.heap = heap
        entry = self.heap.poll()
        assert entry is not None
        n = self._add(str(entry[0]), task, active)
        entry[1] = n
        self.heap.offer(entry)
        return n


def _entry_count(entry: list[object]) -> float:
    count = entry[1]
    assert isinstance(count, int)
    return count


def _process_load(process: _Process) -> float:
    return process.load


def _ceil_div(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _Quota:
    """Tasks per member, re-divided over the members left each time one reaches it
    (``maybeUpdateActiveTasksPerMember``, ``maybeUpdateTotalTasksPerMember``)."""

    __slots__ = ("members", "per_member", "tasks")

    def __init__(self, tasks: int, members: int) -> None:
        self.tasks = tasks
        self.members = members
        self.per_member = _ceil_div(tasks, members)

    def update(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count
            self.per_member = _ceil_div(self.tasks, self.members)


Member = tuple[str, str]  # (process id, member id)


class _State:
    def __init__(self, processes: dict[str, _Process], process_order: list[str], sub_rank: dict[str, int]) -> None:
        self.processes = processes
        self.process_order = process_order
        self.sub_rank = sub_rank
        self.active_quota = _Quota(0, 0)
        self.total_quota = _Quota(0, 0)
        self.prev_active: dict[Task, Member] = {}
        self.prev_standby: dict[Task, list[Member]] = {}

    def least_loaded_prev(self, members: list[Member] | None, standby_of: Task | None) -> Member | None:
        """``findPrevMemberWithLeastLoad``: the first candidate, replaced only by one whose
        process load *and* member load are both lower."""
        if not members:
            return None
        candidate: Member | None = None
        best_process = best_member = 0.0
        for member in members:
            process = self.processes[member[0]]
            if standby_of is not None and standby_of in process.tasks:
                continue
            process_load = process.load
            member_load = process.counts[member[1]]
            if candidate is None or (process_load < best_process and member_load < best_member):
                candidate, best_process, best_member = member, process_load, member_load
        return candidate

    def heap_of_processes(self) -> _JavaHeap[_Process]:
        heap: _JavaHeap[_Process] = _JavaHeap(_process_load)
        for process_id in self.process_order:
            heap.offer(self.processes[process_id])
        return heap


def _java_string_key(s: str) -> bytes:
    return s.encode("utf-16-be")  # byte order of UTF-16BE = String.compareTo's code unit order


def assign(
    members: Mapping[str, MemberSpec],
    subtopologies: Mapping[str, Subtopology],
    configs: AssignmentConfigs = AssignmentConfigs(),
    *,
    member_order: Literal["kafka", "given"] = "kafka",
) -> dict[str, MemberAssignment]:
    """The target assignment Kafka 4.4's ``sticky`` assignor computes (see the module's doc)."""
    num_standby = configs.num_standby_replicas
    sub_ids = list(subtopologies)
    sub_rank = {s: i for i, s in enumerate(sorted(sub_ids, key=_java_string_key))}
    member_ids = java_hash_map_order(members) if member_order == "kafka" else list(members)

    # initialize: processes in order of first appearance, with their members
    processes: dict[str, _Process] = {}
    for member_id in member_ids:
        process_id = members[member_id].process_id
        process = processes.get(process_id)
        if process is None:
            process = processes[process_id] = _Process(process_id)
        process.add_member(member_id)
    for process in processes.values():
        process.member_order = java_hash_map_order(process.counts)
    state = _State(processes, java_hash_map_order(processes, len(member_ids)), sub_rank)

    total_active = sum(subtopologies[s].num_tasks for s in sub_ids)
    total = total_active + sum(subtopologies[s].num_tasks * num_standby for s in sub_ids if subtopologies[s].stateful)
    state.active_quota = _Quota(total_active, len(member_ids))
    state.total_quota = _Quota(total, len(member_ids))

    candidates: dict[Task, list[tuple[int, int, Member]]] = {}  # (0 = standby / 1 = offsets, -offset sum, member)
    for member_id in member_ids:
        spec = members[member_id]
        member = (spec.process_id, member_id)
        for subtopology, partitions in spec.active_tasks.items():
            for partition in partitions:
                state.prev_active[(subtopology, partition)] = member  # the last member claiming it wins
        for subtopology, partitions in spec.standby_tasks.items():
            offsets = spec.task_offsets.get(subtopology, {})
            for partition in partitions:
                candidates.setdefault((subtopology, partition), []).append((0, -offsets.get(partition, 0), member))
        for subtopology, offsets in spec.task_offsets.items():
            standby = spec.standby_tasks.get(subtopology, ())
            for partition, offset_sum in offsets.items():
                if partition not in standby:
                    candidates.setdefault((subtopology, partition), []).append((1, -offset_sum, member))
    for task, ranked in candidates.items():
        ranked.sort(key=lambda c: (c[0], c[1]))  # stable: equal candidates keep member order
        state.prev_standby[task] = [c[2] for c in ranked]

    active_tasks = [(s, p) for s in sub_ids for p in range(subtopologies[s].num_tasks)]
    _assign_active(state, active_tasks)
    if num_standby > 0:
        stateful_tasks = [
            (s, p) for s in sub_ids if subtopologies[s].stateful for p in range(subtopologies[s].num_tasks)
        ]
        _assign_standby(state, stateful_tasks, num_standby)

    active_of: dict[str, list[Task]] = {}
    standby_of: dict[str, list[Task]] = {}
    for process in processes.values():
        active_of.update(process.active)
        standby_of.update(process.standby)
    return {
        member_id: MemberAssignment(_compact(active_of.get(member_id, ())), _compact(standby_of.get(member_id, ())))
        for member_id in members
    }


def _compact(tasks: Iterable[Task]) -> dict[str, tuple[int, ...]]:
    by_sub: dict[str, list[int]] = {}
    for subtopology, partition in tasks:
        by_sub.setdefault(subtopology, []).append(partition)
    return {s: tuple(sorted(by_sub[s])) for s in sorted(by_sub)}


def _assign_active(state: _State, tasks: list[Task]) -> None:
    rank = state.sub_rank
    quota, total_quota = state.active_quota, state.total_quota
    tasks.sort(key=lambda t: (t[1], rank[t[0]]))

    # 1. back to the current active owner
    rest: list[Task] = []
    for task in tasks:
        prev = state.prev_active.get(task)
        if prev is not None:
            process = state.processes[prev[0]]
            if process.counts[prev[1]] < quota.per_member:
                n = process.add_task(prev[1], task, True)
                quota.update(n)
                total_quota.update(n)
                continue
        rest.append(task)

    # 2. to the chosen previous standby (or holder of reported state)
    tasks, rest = rest, []
    for task in tasks:
        prev = state.least_loaded_prev(state.prev_standby.get(task), None)
        if prev is not None:
            process = state.processes[prev[0]]
            if process.counts[prev[1]] < quota.per_member:
                n = process.add_task(prev[1], task, True)
                quota.update(n)
                total_quota.update(n)
                continue
        rest.append(task)

    # 3. the rest to the least-loaded process, range-like
    rest.sort(key=lambda t: (rank[t[0]], t[1]))
    heap = state.heap_of_processes()
    for task in rest:
        least = heap.poll()
        if least is None:
            raise TaskAssignorError(f"No process available to assign active task {task[0]}_{task[1]}.")
        n = least.add_task_to_least_loaded_member(task, True)
        if n == -1:
            raise TaskAssignorError(f"No member available to assign active task {task[0]}_{task[1]}.")
        quota.update(n)
        total_quota.update(n)
        heap.offer(least)


def _assign_standby(state: _State, tasks: list[Task], num_standby: int) -> None:
    rank = state.sub_rank
    quota = state.total_quota
    tasks.sort(key=lambda t: (t[1], rank[t[0]]), reverse=True)  # keys are unique: reverse = reversed()

    to_least_loaded: list[tuple[Task, int]] = []
    for task in tasks:
        for i in range(num_standby):
            prev = state.prev_active.get(task)
            if prev is not None:
                process = state.processes[prev[0]]
                if task not in process.tasks and process.counts[prev[1]] < quota.per_member:
                    quota.update(process.add_task(prev[1], task, False))
                    continue
            prev_standbys = state.prev_standby.get(task)
            if prev_standbys:
                prev = state.least_loaded_prev(prev_standbys, task)
                if prev is not None:
                    process = state.processes[prev[0]]
                    if process.counts[prev[1]] < quota.per_member:
                        quota.update(process.add_task(prev[1], task, False))
                        continue
            to_least_loaded.append((task, num_standby - i))
            break

    to_least_loaded.sort(key=lambda x: (rank[x[0][0]], x[0][1]), reverse=True)
    heap = state.heap_of_processes()
    for task, remaining in to_least_loaded:
        for _ in range(remaining):
            if not _standby_to_least_loaded(state, heap, task):
                break  # Kafka: "Unable to assign … standby tasks …" (a warning)


def _standby_to_least_loaded(state: _State, heap: _JavaHeap[_Process], task: Task) -> bool:
    """``assignStandbyToMemberWithLeastLoad``, its recursion unrolled: poll processes until one
    does not hold the task, then put them all back, the last polled first."""
    polled: list[_Process] = []
    found = False
    while True:
        process = heap.poll()
        if process is None:
            break
        polled.append(process)
        if task not in process.tasks:
            n = process.add_task_to_least_loaded_member(task, False)
            if n != -1:
                found = True
                state.total_quota.update(n)
            break
        if not heap:
            break
    for process in reversed(polled):
        heap.offer(process)
    return found
