// graphmem schema 010: bullet evolution (crossover of a failing learning with its most helpful siblings).
// EVOLVED_FROM Learning->Learning: an evolved learning and each parent it was bred from; fitness is
//                          the child's share of helpful verdicts on the parent's failed cases.
// Learning.evolved_at:     when evolution last tried this learning (a failing one is retried only
//                          after new ratings).
CREATE REL TABLE EVOLVED_FROM(FROM Learning TO Learning, fitness DOUBLE, created_at TIMESTAMP);
ALTER TABLE Learning ADD evolved_at TIMESTAMP;
