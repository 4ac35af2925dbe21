-- Nothing looks up an event's children by parent: the tree is read whole, in seq order, through
-- transcript_identity_seq. The index cost one more B-tree write per appended event, at a random
-- place (parent ids are random), which in a 500-event import batch dirties hundreds of pages.
DROP INDEX transcript_identity_children;
