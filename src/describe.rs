//! A stable, human-readable listing of a module's symbols and references
//! (`ptxld --print-symbols`). Tests compare it against known answers.

use std::fmt::Write as _;

use crate::ir::{ItemKind, Linkage, Module, Param, ParamSpec, Signature, SymbolKind, TypeClass};
use crate::source::SourceFile;

fn text(f: &SourceFile, span: crate::source::Span) -> String {
    String::from_utf8_lossy(f.slice(span)).into_owned()
}

fn at(f: &SourceFile, span: crate::source::Span) -> String {
    let lc = f.line_col(span.lo);
    format!("{}:{}", lc.line, lc.col)
}

/// `.param .align 8 .b8 [16]`-style rendering of a type specifier and dimensions.
pub fn type_string(spec: &ParamSpec, dims: &[Option<u64>]) -> String {
    let mut s = String::from(spec.space.as_str());
    if let Some(p) = &spec.ptr {
        s.push_str(" .ptr");
        if let Some(sp) = p.space {
            let _ = write!(s, " {}", sp.as_str());
        }
        if let Some(a) = p.align {
            let _ = write!(s, " .align {a}");
        }
    }
    if let Some(a) = spec.align {
        let _ = write!(s, " .align {a}");
    }
    if let Some(v) = spec.vector {
        let _ = write!(s, " .v{v}");
    }
    let class = match spec.ty.class {
        TypeClass::Bits => "b",
        TypeClass::Unsigned => "u",
        TypeClass::Signed => "s",
        TypeClass::Float => "f",
        TypeClass::BFloat => "bf",
        TypeClass::AltFloat => "alt",
        TypeClass::Pred => "pred",
        TypeClass::TexRef => "texref",
        TypeClass::SamplerRef => "samplerref",
        TypeClass::SurfRef => "surfref",
    };
    if matches!(
        spec.ty.class,
        TypeClass::Pred | TypeClass::TexRef | TypeClass::SamplerRef | TypeClass::SurfRef
    ) {
        let _ = write!(s, " .{class}");
    } else {
        let _ = write!(s, " .{class}{}", spec.ty.bits);
    }
    for d in dims {
        match d {
            Some(n) => {
                let _ = write!(s, "[{n}]");
            }
            None => s.push_str("[]"),
        }
    }
    s
}

fn params(ps: Option<&[Param]>) -> String {
    match ps {
        None => "-".to_string(),
        Some(ps) => {
            let inner: Vec<String> = ps.iter().map(|p| type_string(&p.spec, p.dims())).collect();
            format!("({})", inner.join(", "))
        }
    }
}

fn signature(sig: &Signature) -> String {
    format!("{} {}", params(sig.returns()), params(sig.params()))
}

/// Lists header, symbols and references of `m`.
pub fn describe(m: &Module, f: &SourceFile) -> String {
    let mut out = String::new();
    let h = &m.header;
    if let Some(v) = h.version {
        let _ = writeln!(out, "version {}.{}", v.major, v.minor);
    }
    if let Some(t) = &h.target {
        let _ = writeln!(
            out,
            "target {}",
            text(f, t.span).trim_start_matches(".target").trim()
        );
    }
    let _ = writeln!(out, "address_size {}", h.address_bits());
    for (id, s) in m.symbols_with_ids() {
        let kind = match s.kind {
            SymbolKind::Function => "func",
            SymbolKind::Entry => "entry",
            SymbolKind::Variable => "var",
            SymbolKind::SectionLabel => "section-label",
            SymbolKind::BodyName => "body-name",
        };
        let linkage = match s.linkage {
            Linkage::Local => "local",
            l => &l.as_str()[1..],
        };
        let _ = write!(
            out,
            "symbol {} {} {} {}",
            id.0,
            text(f, s.name),
            kind,
            linkage
        );
        for d in &s.decls {
            let _ = write!(
                out,
                " {}@{}",
                if d.is_definition { "def" } else { "decl" },
                at(f, d.name)
            );
        }
        if let Some(target) = s.aliasee {
            let _ = write!(out, " alias-of {}", text(f, m.symbol(target).name));
        }
        // The type of the first declaration.
        let d = s.decls.first();
        match &m.item(d.item).kind {
            ItemKind::Variable(v) if s.kind == SymbolKind::Variable => {
                let decl = &v.declarators[d.declarator as usize];
                let _ = write!(
                    out,
                    " type {}",
                    type_string(&ParamSpec::from(&v.spec), &decl.dims)
                );
                if v.spec.managed {
                    out.push_str(" managed");
                }
                if decl.init.is_some() {
                    out.push_str(" init");
                }
            }
            ItemKind::Function(func)
                if matches!(s.kind, SymbolKind::Function | SymbolKind::Entry) =>
            {
                let _ = write!(out, " sig {}", signature(&func.signature));
            }
            _ => {}
        }
        out.push('\n');
    }
    for r in &m.references {
        let _ = writeln!(
            out,
            "ref {} {:?} {}",
            at(f, r.span),
            r.kind,
            text(f, m.symbol(r.symbol).name)
        );
    }
    out
}
