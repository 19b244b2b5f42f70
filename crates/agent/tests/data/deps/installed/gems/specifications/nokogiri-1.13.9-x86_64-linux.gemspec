# -*- encoding: utf-8 -*-
# stub: nokogiri 1.13.9 x86_64-linux lib

Gem::Specification.new do |s|
  s.name = "nokogiri".freeze
  s.version = "1.13.9"
  s.platform = "x86_64-linux".freeze

  s.required_rubygems_version = Gem::Requirement.new(">= 0".freeze) if s.respond_to? :required_rubygems_version=
  s.require_paths = ["lib".freeze]
  s.authors = ["trusthub tests".freeze]
  s.date = "2026-11-27"
  s.rubygems_version = "3.3.15".freeze
  s.summary = "a local stand-in".freeze

  s.installed_by_version = "3.3.15" if s.respond_to? :installed_by_version
end
