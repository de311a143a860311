// The substep's cell lists as the three column walks read them
// (cell_scatter.wgsl for P2G, g2p_adjoint.wgsl and p2g_adjoint.wgsl
// `main_cells` for G2P* and P2G*): their bindings, declared once here at
// 10–12 in all three, and the walk of one cell's list, written once.
// p2g_bin.wgsl builds the lists (every particle on the list of its
// stencil's base cell); grid_clear.wgsl empties them.

// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(10) var<storage, read> node_box: array<u32, 8>;
// List heads per base cell: p + 1 of the first particle, 0 = empty.
@group(0) @binding(11) var<storage, read> cell_head: array<u32>;
// Links per particle: p + 1 of the next particle of its cell, 0 = end.
@group(0) @binding(12) var<storage, read> particle_next: array<u32>;

// A position in a column walk: the next list entry (p + 1, 0 = end of the
// cell's list) and the links followed so far over the whole column.
struct ListCursor {
    entry: u32,
    links: u32,
}

// The first particle of the list of cell `cell` (a node index), in a walk
// that has followed `links` links so far.
fn list_start(cell: u32, links: u32) -> ListCursor {
    return ListCursor(cell_head[cell], links);
}

// Whether the cursor is at a particle. A walk follows at most
// `particle_count` links over a whole column, so a corrupt (cyclic) list
// cannot hang the kernel (src/gpu/kernel.rs `physfit_runtime_checks`).
fn list_has_particle(cursor: ListCursor, particle_count: u32) -> bool {
    return cursor.links < particle_count && cursor.entry != 0u;
}

// The particle at the cursor (list_has_particle must hold).
fn list_particle(cursor: ListCursor) -> u32 {
    return cursor.entry - 1u;
}

// The cursor one link further.
fn list_next(cursor: ListCursor) -> ListCursor {
    return ListCursor(particle_next[cursor.entry - 1u], cursor.links + 1u);
}
