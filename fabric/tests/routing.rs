//! The tables the fabric writes (switch.md §2.5): toward every GPU, no frame can follow a cycle
//! of switches through any port any entry lists, in one tier and in two, with every way of
//! choosing a leaf's uplinks.

use std::collections::HashMap;

use ethlink_fabric::scenario::{LeafUplinks, Topology, TopologyKind};
use ethlink_fabric::{End, Fabric, Scenario};
use ethlink_protocol::GpuId;

/// Whether, toward `dst`, some switch can reach itself again through listed ports.
fn has_cycle(f: &Fabric, next: &HashMap<(u32, u16), End>, switches: u32, dst: u16) -> bool {
    // Depth-first over every listed port: 0 unvisited, 1 on the stack, 2 done.
    fn visit(
        f: &Fabric,
        next: &HashMap<(u32, u16), End>,
        state: &mut [u8],
        s: u32,
        dst: u16,
    ) -> bool {
        match state.get(s as usize) {
            Some(1) => return true,
            Some(2) | None => return false,
            _ => {}
        }
        state[s as usize] = 1;
        let ports = f
            .switch(s as usize)
            .map(|sw| {
                sw.routes()
                    .ports(GpuId::new(dst).unwrap_or_default())
                    .to_vec()
            })
            .unwrap_or_default();
        for p in ports {
            if let Some(End::Switch { switch, .. }) = next.get(&(s, p))
                && visit(f, next, state, *switch, dst)
            {
                return true;
            }
        }
        state[s as usize] = 2;
        false
    }
    let mut state = vec![0u8; switches as usize];
    (0..switches).any(|s| visit(f, next, &mut state, s, dst))
}

#[test]
fn the_tables_of_every_topology_are_free_of_cycles() {
    let mut scenarios = Vec::new();
    for how in [LeafUplinks::ByPath, LeafUplinks::ByDestination] {
        let mut s = Scenario {
            topology: Topology {
                kind: TopologyKind::TwoTier,
                gpus: 8,
                stacks: 1,
                ports_per_stack: 2,
                leaves: 4,
                spines: 3,
                leaf_uplinks: how,
            },
            ..Scenario::default()
        };
        s.metrics.sample_ns = 0;
        scenarios.push(s);
    }
    let mut one = Scenario::default();
    one.metrics.sample_ns = 0;
    scenarios.push(one);
    for s in scenarios {
        let f = Fabric::new(&s).expect("valid");
        let mut next = HashMap::new();
        let mut switches = 0;
        for c in f.cables() {
            for (from, to) in [(c.a, c.b), (c.b, c.a)] {
                if let End::Switch { switch, port } = from {
                    next.insert((switch, port), to);
                    switches = switches.max(switch + 1);
                }
            }
        }
        assert!(switches > 0);
        //= docs/spec/switch.md#25-routing-free-of-deadlock
        //= type=test
        //# SW-2-15 The forwarding tables of the switches of a fabric MUST NOT let a frame follow
        //# a cycle of switches toward any destination, through any port any entry lists,
        //# whatever group of preference (§2.3) is in use.
        for dst in 0..s.topology.gpus {
            assert!(
                !has_cycle(&f, &next, switches, dst),
                "{:?}: a cycle toward GPU {dst}",
                s.topology.kind
            );
        }
    }
}
